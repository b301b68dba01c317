import { type FieldError } from '../../errors/dris-error.js';
import type { RecordEnvelope } from '../../domain/records/types.js';
import { assertCanonicalizable } from '../../domain/hashing/canonical.js';
import { HASH_LEN, MerkleHasher, type FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, HashingBackend, HexLeavesRoot, PreparedBody, PreparedPayload } from '../../domain/hashing/port.js';
import { envelopeCanonical, NULLABLE_ENVELOPE_FIELD } from '../../domain/hashing/record-hash.js';
import { ENVELOPE_FIELDS } from '../../domain/records/envelope.js';
import { LazyPreparedBody, type EnvelopeText } from './lazy-prepared-body.js';
import { loadNativeAddon, type AllProofsNative, type NativeAddon } from './native-addon.js';
import { MerkleChecks } from './merkle-checks.js';

export { configuredNativeAddon, findNativeAddon, loadNativeAddon, useNativeAddon, type NativeAddon } from './native-addon.js';

/** Members per envelope in envelopeHashesUtf16's arguments, in ENVELOPE_FIELDS' order. */
const WIDTH = ENVELOPE_FIELDS.length;

/** Leaves as one buffer, plus offsets unless every leaf is 32 bytes. */
function packLeaves(leaves: readonly Uint8Array[]): { data: Uint8Array; offsets: Uint32Array | null } {
  let total = 0;
  let uniform = true;
  for (const l of leaves) {
    total += l.length;
    if (l.length !== HASH_LEN) uniform = false;
  }
  const data = new Uint8Array(total);
  const offsets = uniform ? null : new Uint32Array(leaves.length + 1);
  let at = 0;
  for (let i = 0; i < leaves.length; i++) {
    const l = leaves[i]!;
    if (offsets !== null) offsets[i] = at;
    data.set(l, at);
    at += l.length;
  }
  if (offsets !== null) offsets[leaves.length] = at;
  return { data, offsets };
}

/**
 * prepareBody's answer in a form that crosses threads cheaply: canonical texts stay UTF-8 in one
 * buffer (transferable) instead of becoming strings, and the hashes are one hex string.
 */
export interface PackedPrepared {
  readonly errors: readonly FieldError[];
  /** Canonical text length per payload in bytes; -1 when there is none. */
  readonly lengths: Int32Array;
  /** Every canonical text, back to back, then the envelope text. */
  readonly texts: Uint8Array;
  /** 64 hex digits per present payload, back to back. */
  readonly hashes: string;
  /** Bytes of the envelope text at the end of `texts` (the body with payload objects replaced by `{}`); -1 when absent. */
  readonly envelopeLength: number;
}

const HEADER_LEN = 20;
const FLAG_ENVELOPE_TEXT = 2;

/**
 * How the texts leave an answer: `own`, copied into a buffer of their own (which a worker can
 * transfer); `pooled`, copied with Buffer.allocUnsafe, which takes small ones from Node's shared
 * pool (a buffer of its own costs about a microsecond to create, more than a small body's whole
 * preparation); `view`, left where they are (the answer is not reused).
 */
type TextsCopy = 'own' | 'pooled' | 'view';

/** Decodes the answer at the start of `r` (layout in native/src/lib.rs, Prepared::encode_into). */
function unpack(r: Buffer, copy: TextsCopy): PackedPrepared {
  const flags = r.readUInt32LE(0);
  const errorsLen = r.readUInt32LE(8);
  const n = r.readUInt32LE(12);
  const envelopeLength = (flags & FLAG_ENVELOPE_TEXT) !== 0 ? r.readUInt32LE(16) : -1;
  const lengths = new Int32Array(n);
  let present = 0;
  let total = 0;
  let p = HEADER_LEN;
  for (let i = 0; i < n; i++, p += 4) {
    const len = r.readInt32LE(p);
    lengths[i] = len;
    if (len >= 0) {
      present++;
      total += len;
    }
  }
  const errors: FieldError[] = errorsLen === 0 ? [] : (JSON.parse(r.toString('utf8', p, p + errorsLen)) as FieldError[]);
  p += errorsLen;
  const textAt = p + 64 * present;
  // Hex digits already: latin1 makes the string with one copy.
  const hashes = present === 0 ? '' : r.toString('latin1', p, textAt);
  const end = textAt + total + Math.max(0, envelopeLength);
  let texts: Uint8Array = r.subarray(textAt, end);
  if (copy !== 'view') {
    const kept = copy === 'own' ? Buffer.allocUnsafeSlow(end - textAt) : Buffer.allocUnsafe(end - textAt);
    r.copy(kept, 0, textAt, end);
    texts = kept;
  }
  return { errors, lengths, texts, hashes, envelopeLength };
}

/** The payloads of a packed answer; each canonical text is decoded on first read. */
export function packedPayloads(p: PackedPrepared): (PreparedPayload | null)[] {
  const buf = textsBuffer(p);
  const n = p.lengths.length;
  const payloads = new Array<PreparedPayload | null>(n);
  let at = 0;
  let k = 0;
  for (let i = 0; i < n; i++) {
    const len = p.lengths[i]!;
    if (len < 0) {
      payloads[i] = null;
      continue;
    }
    payloads[i] = new LazyPayload(buf, at, at + len, p.hashes.slice(64 * k, 64 * k + 64));
    k++;
    at += len;
  }
  return payloads;
}

/** The envelope text of a packed answer, or undefined when the envelope must come from the value. */
export function packedEnvelopeText(p: PackedPrepared): EnvelopeText | undefined {
  if (p.envelopeLength < 0) return undefined;
  return { bytes: textsBuffer(p), start: p.texts.length - p.envelopeLength, end: p.texts.length };
}

/** The texts as a Buffer: the same object when they are one (views cost more to make than a small body takes to prepare). */
function textsBuffer(p: PackedPrepared): Buffer {
  return Buffer.isBuffer(p.texts) ? p.texts : Buffer.from(p.texts.buffer, p.texts.byteOffset, p.texts.byteLength);
}

/**
 * The canonical text becomes a JS string on first read: UTF-8 to UTF-16 conversion is a large
/**
 * The canonical text becomes a JS string on first read: UTF-8 to UTF-16 conversion is a large
 * share of the cost, and a caller that stores bytes (`canonicalBytes`) never pays it. `canonical`
 * is an own enumerable accessor, so spreading and JSON.stringify see the text; `canonicalBytes`
 * lives on the prototype, so they see nothing else. It is defined with one shared descriptor: an
 * object literal with a getter costs three times as much to create.
 */
class LazyPayload implements PreparedPayload {
  declare readonly canonical: string;
  readonly payloadHash: string;
  #buf: Buffer | undefined;
  #start: number;
  #end: number;
  #text: string | undefined;

  constructor(buf: Buffer, start: number, end: number, payloadHash: string) {
    Object.defineProperty(this, 'canonical', LazyPayload.#canonical);
    this.payloadHash = payloadHash;
    this.#buf = buf;
    this.#start = start;
    this.#end = end;
  }

  get canonicalBytes(): Uint8Array {
    return this.#buf === undefined ? Buffer.from(this.#text ?? '', 'utf8') : this.#buf.subarray(this.#start, this.#end);
  }

  static readonly #canonical: PropertyDescriptor = {
    get(this: LazyPayload): string {
      if (this.#text === undefined) {
        this.#text = this.#buf!.toString('utf8', this.#start, this.#end);
        // The text no longer needs the buffer, which may be large and shared.
        this.#buf = undefined;
      }
      return this.#text;
    },
    enumerable: true,
    configurable: false,
  };
}

/** The Rust addon of native/: parsing, RFC 8785, SHA-256 (SHA-NI) and Merkle trees in one call. */
export class NativeHashingBackend extends MerkleChecks implements HashingBackend {
  readonly name: HashBackendName = 'native';

  private constructor(readonly addon: NativeAddon) {
    super(
      new MerkleHasher({
        digestInto: (data, out, offset) => {
          if (!addon.sha256Into(data, out, offset)) throw new RangeError('no room for a digest');
        },
      }),
    );
  }

  static load(): NativeHashingBackend {
    return new NativeHashingBackend(loadNativeAddon());
  }

  /** Whether SHA-256 runs on the CPU's SHA extensions. */
  get shaExtensions(): boolean {
    return this.addon.shaExtensions();
  }

  /**
   * The addon writes every answer into this reused buffer (warm memory: a fresh buffer per body,
   * or an arena of them, costs page faults that outweigh the copy), and the parts kept are copied
   * out of it.
   */
  private scratch: Buffer = Buffer.allocUnsafeSlow(64 * 1024);

  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody {
    const p = unpack(this.answer(body, shape), 'pooled');
    return new LazyPreparedBody(body, shape, p.errors, packedPayloads(p), packedEnvelopeText(p));
  }

  /** prepareBody's answer before payload objects are made, in buffers of its own: what a worker sends back. */
  preparePacked(body: Uint8Array, shape: BodyShape): PackedPrepared {
    return unpack(this.answer(body, shape), 'own');
  }

  /** The addon's answer for `body`, in the reused scratch buffer. */
  private answer(body: Uint8Array, shape: BodyShape): Buffer {
    const bulk = shape === 'bulk';
    let used = this.addon.prepareBodyAt(body, bulk, this.scratch, 0);
    if (used < 0) {
      this.scratch = Buffer.allocUnsafeSlow(Math.max(-used, 2 * this.scratch.length));
      used = this.addon.prepareBodyAt(body, bulk, this.scratch, 0);
    }
    return this.scratch;
  }

  /** prepareBody on the libuv thread pool, off the event loop; `body` must not change meanwhile. */
  async prepareBodyAsync(body: Uint8Array, shape: BodyShape): Promise<PreparedBody> {
    const p = unpack(await this.addon.prepareBodyAsync(body, shape === 'bulk'), 'view');
    return new LazyPreparedBody(body, shape, p.errors, packedPayloads(p), packedEnvelopeText(p));
  }

  private envelopeUnits = Buffer.allocUnsafeSlow(32 * 1024);
  private envelopeLengths = new Int32Array(640);
  private envelopeOut = Buffer.allocUnsafeSlow(64 * 64);

  recordHashes(envelopes: readonly RecordEnvelope[]): string[] {
    const n = envelopes.length;
    if (n === 0) return [];
    // The values cross as one string of UTF-16 code units plus their lengths: concatenation is
    // cheap in V8, and escaping, UTF-8 and the check for unpaired surrogates happen in native
    // code. A value that is not a string (or null where allowed) takes the checked path.
    if (this.envelopeLengths.length < WIDTH * n) this.envelopeLengths = new Int32Array(WIDTH * n);
    const lengths = this.envelopeLengths;
    let text = '';
    for (let i = 0, k = 0; i < n; i++, k += WIDTH) {
      const e = envelopes[i]!;
      for (let j = 0; j < WIDTH; j++) {
        const field = ENVELOPE_FIELDS[j]!;
        const value: unknown = e[field];
        if (typeof value === 'string') {
          text += value;
          lengths[k + j] = value.length;
        } else if (value === null && field === NULLABLE_ENVELOPE_FIELD) {
          lengths[k + j] = -1;
        } else {
          return this.checkedRecordHashes(envelopes);
        }
      }
    }
    if (this.envelopeUnits.length < 2 * text.length) this.envelopeUnits = Buffer.allocUnsafeSlow(4 * text.length);
    if (this.envelopeOut.length < 64 * n) this.envelopeOut = Buffer.allocUnsafeSlow(64 * n);
    const units = this.envelopeUnits;
    units.write(text, 0, 'utf16le');
    const ok = this.addon.envelopeHashesUtf16(
      new Uint16Array(units.buffer, units.byteOffset, text.length),
      lengths.subarray(0, WIDTH * n),
      this.envelopeOut,
    );
    if (!ok) return this.checkedRecordHashes(envelopes);
    const hex = this.envelopeOut.toString('latin1', 0, 64 * n);
    const out = new Array<string>(n);
    for (let i = 0; i < n; i++) out[i] = hex.slice(i * 64, i * 64 + 64);
    return out;
  }

  /** The envelope-by-envelope path, which names the field that has no canonical form. */
  private checkedRecordHashes(envelopes: readonly RecordEnvelope[]): string[] {
    // Canonical JSON never holds a raw newline, so one string carries the whole batch.
    let joined = envelopeCanonical(envelopes[0]!);
    for (let i = 1; i < envelopes.length; i++) joined += '\n' + envelopeCanonical(envelopes[i]!);
    const hex = this.addon.sha256Lines(joined);
    const out = new Array<string>(envelopes.length);
    for (let i = 0; i < envelopes.length; i++) out[i] = hex.slice(i * 64, i * 64 + 64);
    return out;
  }

  canonicalize(value: unknown): string {
    assertCanonicalizable(value);
    return this.addon.canonicalizeJson(Buffer.from(JSON.stringify(value), 'utf8'));
  }

  sha256Hex(data: Uint8Array): string {
    return this.addon.sha256Hex(data);
  }

  merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
    const { data, offsets } = packLeaves(leaves);
    return new Uint8Array(this.addon.merkleRoot(data, offsets));
  }

  /** Root of leaves of 32 bytes each, already packed back to back (no copy). */
  override async rootOfHexLeaves(leaves: readonly string[]): Promise<HexLeavesRoot | null> {
    if (this.addon.hexLeavesRootAsync === undefined) return super.rootOfHexLeaves(leaves);
    // Joined, leaves of other lengths could still cut into whole leaves: each is measured first.
    // In UTF-8 (never latin1, which would turn U+0161 into `a`) any character past ASCII takes
    // more than one byte, so the text is no longer whole leaves, and the addon refuses it.
    for (const l of leaves) if (l.length !== 2 * HASH_LEN) return null;
    return this.addon.hexLeavesRootAsync(Buffer.from(leaves.join(''), 'utf8'));
  }

  /** In one call to the addon: the hashes cross as text and are decoded and hashed there. */
  override recordInclusionHolds(recordHash: string, index: number, treeSize: number, proof: readonly string[], root: string): boolean {
    if (this.addon.recordInclusionHolds === undefined) return super.recordInclusionHolds(recordHash, index, treeSize, proof, root);
    // Joined, hashes of other lengths could still cut into whole ones: each is measured first
    // (a character past ASCII then makes the UTF-8 text longer, and the addon refuses it).
    for (const p of proof) if (p.length !== 2 * HASH_LEN) return false;
    return this.addon.recordInclusionHolds(recordHash, index, treeSize, proof.join(''), root);
  }

  merkleRootPacked(leaves32: Uint8Array): Uint8Array {
    return new Uint8Array(this.addon.merkleRoot(leaves32, null));
  }

  inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
    const { data, offsets } = packLeaves(leaves);
    if (!Number.isSafeInteger(index) || index < 0 || index >= leaves.length) throw new RangeError(`leaf index ${index} outside 0..${leaves.length - 1}`);
    const buf = this.addon.merkleInclusionProof(data, offsets, index);
    const out: Uint8Array[] = [];
    for (let k = 0; k < buf.length; k += HASH_LEN) out.push(new Uint8Array(buf.buffer, buf.byteOffset + k, HASH_LEN));
    return out;
  }

  allProofs(leaves: readonly Uint8Array[]): FlatProofs {
    const { data, offsets } = packLeaves(leaves);
    return toFlat(leaves.length, this.addon.merkleAllProofs(data, offsets));
  }

  async allProofsAsync(leaves: readonly Uint8Array[]): Promise<FlatProofs> {
    const { data, offsets } = packLeaves(leaves);
    return toFlat(leaves.length, await this.addon.merkleAllProofsAsync(data, offsets));
  }
}

function toFlat(treeSize: number, r: AllProofsNative): FlatProofs {
  return {
    treeSize,
    root: new Uint8Array(r.root.buffer, r.root.byteOffset, r.root.byteLength),
    hashes: new Uint8Array(r.hashes.buffer, r.hashes.byteOffset, r.hashes.byteLength),
    offsets: r.offsets,
  };
}

import type { FieldError } from '../../errors/dris-error.js';
import { parseIJson } from '../../domain/hashing/ijson.js';
import type { BodyShape, PreparedBody, PreparedPayload } from '../../domain/hashing/port.js';
import { envelopeOf } from '../../domain/hashing/prepare-body.js';

/**
 * A PreparedBody whose parsed value is built only when asked for. Hashing does not need it, and
 * V8's JSON.parse builds it faster than any conversion from native code or another thread would.
 * A body with violations is parsed by the reference parser instead, whose value is exact even for
 * malformed strings (JSON.parse would reject or rewrite them).
 *
 * The envelope comes from `envelopeText` when the native side wrote one (the body with its
 * payload objects already cut out, so JSON.parse reads a fraction of the bytes), else from the
 * value.
 */
/** Where an envelope text lies: bytes[start..end] (UTF-8). */
export interface EnvelopeText {
  readonly bytes: Buffer;
  readonly start: number;
  readonly end: number;
}

export class LazyPreparedBody implements PreparedBody {
  private parsed = false;
  private cachedValue: unknown;
  private envelopeBuilt = false;
  private cachedEnvelope: unknown;

  constructor(
    private readonly body: Uint8Array,
    private readonly shape: BodyShape,
    readonly errors: readonly FieldError[],
    readonly payloads: readonly (PreparedPayload | null)[],
    private envelopeText?: EnvelopeText,
  ) {}

  get value(): unknown {
    if (!this.parsed) {
      this.parsed = true;
      if (this.errors.length === 0) {
        this.cachedValue = JSON.parse(utf8(this.body));
      } else if (this.errors.some((e) => e.code === 'invalid_json')) {
        this.cachedValue = undefined;
      } else {
        this.cachedValue = parseIJson(this.body, { forceReference: true }).value;
      }
    }
    return this.cachedValue;
  }

  get envelope(): unknown {
    if (!this.envelopeBuilt) {
      this.envelopeBuilt = true;
      // Only a body without violations has an envelope text, and JSON.parse reads it exactly.
      this.cachedEnvelope = this.envelopeText !== undefined && this.errors.length === 0 ? JSON.parse(this.envelopeText.bytes.toString('utf8', this.envelopeText.start, this.envelopeText.end)) : envelopeOf(this.value, this.shape);
      this.envelopeText = undefined;
    }
    return this.cachedEnvelope;
  }
}

function utf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

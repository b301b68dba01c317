import t, { type Test } from 'tap';
import { isDeepStrictEqual } from 'node:util';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { parseIJson } from '../../src/domain/hashing/ijson.js';
import type { HashingBackend, PreparedBody } from '../../src/domain/hashing/port.js';
import type { RecordEnvelope } from '../../src/domain/records/types.js';
import { availableBackends } from './helpers/backends.js';

/**
 * Property test: random JSON documents (seeded, reproducible) give byte-identical canonical forms
 * and hashes on every backend, and invalid ones the same violations (code, path, message) and the
 * same rejected payloads. DRIS_PROPERTY_RUNS overrides the document count; DRIS_PROPERTY_SEED the
 * seed.
 */

// 100 000 documents through three backends take tens of seconds on a small machine.
t.setTimeout(600_000);

const RUNS = Number(process.env['DRIS_PROPERTY_RUNS'] ?? 100_000);
const SEED = Number(process.env['DRIS_PROPERTY_SEED'] ?? 0x5eed2024);

class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  /** mulberry32 */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let x = this.s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

const EDGE_NUMBERS = [
  0, -0, 5e-324, -5e-324, 1e21, 1e-7, 1e-6, 9.999999999999997e-7, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 53, 0.1 + 0.2, 1e308,
  1.7976931348623157e308, 333333333.3333333, Number('1424953923781206.2'), 9.999999999999997e22, 1e23, Number('999999999999999700000'), 1, -1, 0.5,
  123456789, 4.5, 1e-27, 1e30, 2.2250738585072014e-308,
];

const CHAR_POOLS: readonly (readonly string[])[] = [
  ['a', 'b', 'z', 'A', 'Z', '0', '9', '_', '$', ' ', '-', '.', ':', '/', '~'],
  ['"', '\\', '\b', '\f', '\n', '\r', '\t', '\u0000', '\u0001', '\u001f', '\u007f'],
  ['é', 'ö', '\u0080', '\u00ff', 'ß', 'Ω', '€', '\u2028', '\u2029', '\u0301'],
  ['\ue000', '\uf8ff', '\ufb33', '\ufeff', '\uffff', '\ufffd', '中', '文', 'ア'],
  ['😀', '😂', '\u{10000}', '\u{10ffff}', '\u{1f600}', '𝄞'],
];

function randomDouble(r: Rng): number {
  const buf = new DataView(new ArrayBuffer(8));
  for (;;) {
    buf.setUint32(0, (r.next() * 2 ** 32) >>> 0);
    buf.setUint32(4, (r.next() * 2 ** 32) >>> 0);
    const d = buf.getFloat64(0);
    if (Number.isFinite(d)) return d;
  }
}

/** A valid spelling of a finite number that is not an unsafe integer literal. */
function spellNumber(r: Rng, n: number): string {
  const plain = Object.is(n, -0) ? '-0' : String(n);
  const integerLiteral = /^-?\d+$/.test(plain);
  if (integerLiteral && !Number.isSafeInteger(n)) return r.chance(0.5) ? `${plain}.0` : n.toExponential().replace('e+', r.pick(['e', 'E+', 'e+']));
  switch (r.int(5)) {
    case 0:
      return n.toExponential().replace('e+', r.pick(['e', 'E', 'e+', 'E+']));
    case 1:
      return integerLiteral ? `${plain}.${'0'.repeat(1 + r.int(3))}` : plain;
    default:
      return plain;
  }
}

function genNumber(r: Rng): string {
  const k = r.int(10);
  if (k < 4) return spellNumber(r, r.pick(EDGE_NUMBERS));
  if (k < 6) return spellNumber(r, randomDouble(r));
  if (k < 8) return spellNumber(r, r.int(2_000_000) - 1_000_000);
  return spellNumber(r, (r.next() - 0.5) * 10 ** (r.int(40) - 20));
}

function escapeChar(ch: string): string {
  let s = '';
  for (let i = 0; i < ch.length; i++) s += '\\u' + ch.charCodeAt(i).toString(16).padStart(4, '0');
  return s;
}

/** Returns [JSON text of the string, its value]. */
function genString(r: Rng, maxLen = 12): [string, string] {
  const len = r.int(maxLen + 1);
  let text = '"';
  let value = '';
  for (let i = 0; i < len; i++) {
    const ch = r.pick(r.pick(CHAR_POOLS));
    value += ch;
    if (r.chance(0.15)) text += r.chance(0.5) ? escapeChar(ch) : escapeChar(ch).toUpperCase().replace(/\\U/g, '\\u');
    else if (ch === '/' && r.chance(0.3)) text += '\\/';
    else text += JSON.stringify(ch).slice(1, -1);
  }
  return [text + '"', value];
}

function ws(r: Rng): string {
  return r.chance(0.85) ? '' : r.pick([' ', '\n', '\t', '\r\n', '  ']);
}

function genValue(r: Rng, depth: number, maxDepth: number): string {
  const leafBias = depth >= maxDepth ? 1 : 0.35 + depth * 0.08;
  if (r.next() < leafBias) {
    switch (r.int(6)) {
      case 0:
      case 1:
        return genNumber(r);
      case 2:
      case 3:
        return genString(r)[0];
      case 4:
        return r.pick(['true', 'false']);
      default:
        return 'null';
    }
  }
  if (r.chance(0.5)) {
    const n = r.int(5);
    const items: string[] = [];
    for (let i = 0; i < n; i++) items.push(ws(r) + genValue(r, depth + 1, maxDepth) + ws(r));
    return '[' + items.join(',') + ']';
  }
  return genObject(r, depth, maxDepth);
}

function genObject(r: Rng, depth: number, maxDepth: number): string {
  const n = r.int(6);
  const seen = new Set<string>();
  const members: string[] = [];
  for (let i = 0; i < n; i++) {
    const [kt, kv] = r.chance(0.3) ? (['"' + r.pick(['a', 'b', '10', '9', '__proto__', 'constructor', 'x y', '']) + '"', ''] as const) : genString(r, 6);
    const value = kt.length === 0 ? kv : (JSON.parse(kt) as string);
    if (seen.has(value)) continue;
    seen.add(value);
    members.push(ws(r) + kt + ws(r) + ':' + ws(r) + genValue(r, depth + 1, maxDepth) + ws(r));
  }
  return '{' + members.join(',') + '}';
}

function nest(r: Rng, levels: number, inner: string): string {
  let s = inner;
  for (let i = 0; i < levels; i++) s = r.chance(0.5) ? `[${s}]` : `{"k${i % 3}":${s}}`;
  return s;
}

/** Inserts one contract violation into a valid object text (its first member position). */
function injectViolation(r: Rng, objText: string): string {
  const body = objText.slice(1);
  const sep = body.startsWith('}') ? '' : ',';
  const k = r.int(9);
  switch (k) {
    case 0: {
      const [kt] = genString(r, 4);
      return `{${kt}:1,${kt}:2${sep}${body}`;
    }
    case 1:
      return `{"a":1,"\\u0061":[1]${sep}${body}`;
    case 2:
      return `{"n":${r.pick(['9007199254740992', '-9007199254740993', '12345678901234567890', '100000000000000000000000'])}${sep}${body}`;
    case 3:
      return `{"n":[${r.pick(['1e400', '-2e308', '1E999', '123e306'])}]${sep}${body}`;
    case 4:
      return `{"s":"x${r.pick(['\\ud800', '\\udfff', '\\ud83d ', '\\ude00\\ud83d'])}"${sep}${body}`;
    case 5:
      return `{"${r.pick(['\\ud800', 'k\\udc00'])}":true${sep}${body}`;
    case 6:
      return `{"deep":${nest(r, 64 + r.int(4), genValue(r, 0, 1))}${sep}${body}`;
    case 7:
      return `{"ok":${nest(r, 62, '0')}${sep}${body}`;
    default:
      return `{"t":"12:30:${r.int(60)}","u":"\\u003a","v":"a:b"${sep}${body}`;
  }
}

/** Breaks the text's syntax (or its UTF-8) at a random place. */
function corrupt(r: Rng, bytes: Buffer): Buffer {
  const at = r.int(bytes.length + 1);
  switch (r.int(7)) {
    case 0:
      return bytes.subarray(0, at);
    case 1:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(r.pick([',', '}', ']', '"', ':', '{', '[', 'x', '\\', '-', '0', '\u0001'])), bytes.subarray(at)]);
    case 2:
      return Buffer.concat([bytes.subarray(0, at), bytes.subarray(Math.min(bytes.length, at + 1))]);
    case 3:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from([r.pick([0xff, 0xc0, 0xed, 0xf8, 0x80, 0xe2])]), bytes.subarray(at)]);
    case 4:
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    case 5: {
      // A raw encoded surrogate inside a string.
      const s = bytes.toString('latin1');
      const q = s.indexOf('"', at);
      if (q < 0) return Buffer.concat([bytes, Buffer.from(' x')]);
      return Buffer.concat([bytes.subarray(0, q + 1), Buffer.from([0xed, 0xa0 + r.int(32), 0x80 + r.int(64)]), bytes.subarray(q + 1)]);
    }
    default:
      return Buffer.concat([bytes.subarray(0, at), Buffer.from(r.pick(['NaN', 'Infinity', '-Infinity', 'undefined', "'a'", '01', '.5', '1.', '+1'])), bytes.subarray(at)]);
  }
}

interface Sample {
  readonly body: Buffer;
  readonly shape: 'single' | 'bulk';
  readonly kind: 'valid' | 'violation' | 'corrupt';
}

function genSample(r: Rng): Sample {
  const bulk = r.chance(0.15);
  const payload = (): string => {
    const deep = r.chance(0.05);
    const obj = deep ? `{"d":${nest(r, 1 + r.int(55), genValue(r, 0, 2))}}` : genObject(r, 0, 1 + r.int(7));
    return obj;
  };
  const record = (p: string): string =>
    `{${ws(r)}"tenantId":"acme",${ws(r)}"recordId":${genString(r, 5)[0]},${ws(r)}"recordPayload":${ws(r)}${p}${ws(r)}}`;
  const kindRoll = r.next();
  const kind: Sample['kind'] = kindRoll < 0.7 ? 'valid' : kindRoll < 0.88 ? 'violation' : 'corrupt';
  const makePayload = (): string => (kind === 'violation' && r.chance(bulk ? 0.4 : 1) ? injectViolation(r, payload()) : payload());
  let text: string;
  if (bulk) {
    const n = 1 + r.int(6);
    const items = Array.from({ length: n }, () => (r.chance(0.1) ? r.pick(['{}', '1', '{"recordPayload":[1]}', '{"recordPayload":null}']) : record(makePayload())));
    text = `{"${r.chance(0.8) ? 'records' : 'items'}":[${items.join(',')}]}`;
  } else {
    text = record(makePayload());
  }
  let body: Buffer = Buffer.from(text, 'utf8');
  if (kind === 'corrupt') body = corrupt(r, body);
  return { body, shape: bulk ? 'bulk' : 'single', kind };
}

function summary(p: PreparedBody): string {
  return JSON.stringify({
    errors: p.errors,
    payloads: p.payloads.map((x) => (x === null ? null : [x.canonical, x.payloadHash])),
    valueDefined: p.value !== undefined,
  });
}

t.test('all backends agree on random documents', async (t) => {
  const { backends, skipped } = await availableBackends();
  for (const s of skipped) t.comment(`backend ${s.name} skipped: ${s.reason}`);
  t.ok(backends.length >= 1, 'at least one backend');
  t.comment(`backends: ${backends.map((b) => b.name).join(', ')}; ${RUNS} documents, seed ${SEED}`);
  const r = new Rng(SEED);
  const counts = { valid: 0, violation: 0, corrupt: 0, rejected: 0, payloads: 0 };
  let failures = 0;
  for (let run = 0; run < RUNS && failures < 10; run++) {
    const sample = genSample(r);
    const results = backends.map((b) => b.prepareBody(sample.body, sample.shape));
    const first = results[0]!;
    // The envelope is read before the value, so a backend that builds it another way (native: from
    // a text with the payloads cut out) is checked on that way.
    const envelopes = results.map((res) => res.envelope);
    results.forEach((res, i) => {
      const want = expectedEnvelope(res.value, sample.shape);
      if (!sameValues(envelopes[i], want) || !sameValues(envelopes[i], envelopes[0])) {
        failures++;
        t.fail(`run ${run}: ${backends[i]!.name} envelope differs`, { body: sample.body.toString('base64') });
      }
    });
    const ref = summary(first);
    counts[sample.kind]++;
    if (first.errors.length > 0) counts.rejected++;
    for (let i = 1; i < backends.length; i++) {
      const other = summary(results[i]!);
      if (other !== ref) {
        failures++;
        t.fail(`run ${run}: ${backends[0]!.name} and ${backends[i]!.name} disagree`, {
          body: sample.body.toString('base64'),
          [backends[0]!.name]: ref,
          [backends[i]!.name]: other,
        });
      }
    }
    // The fast and reference JS parsers agree (every other document: the reference one is slow).
    if (run % 2 === 0) {
      const fast = parseIJson(sample.body);
      const slow = parseIJson(sample.body, { forceReference: true });
      if (JSON.stringify(fast.errors) !== JSON.stringify(slow.errors) || JSON.stringify(fast.errors) !== JSON.stringify(first.errors)) {
        failures++;
        t.fail(`run ${run}: fast and reference parsers disagree`, { body: sample.body.toString('base64') });
      }
    }
    if (sample.kind === 'valid' && first.errors.length > 0) {
      failures++;
      t.fail(`run ${run}: a valid document was rejected: ${JSON.stringify(first.errors)}`, { body: sample.body.toString('base64') });
    }
    // Every backend's parsed value is JSON.parse's.
    for (const res of run % 4 === 0 ? results : []) {
      if (res.errors.length === 0 && !sameValue(res.value, sample.body)) {
        failures++;
        t.fail(`run ${run}: parsed value differs from JSON.parse`);
      }
    }
    // Canonical text equals the pure canonicaliser's on the parsed value.
    const value = first.value as { recordPayload?: unknown; records?: unknown[]; items?: unknown[] } | undefined;
    if (first.errors.length === 0 && value !== undefined) {
      const list = sample.shape === 'single' ? [value] : (Array.isArray(value.records) ? value.records : value.items) ?? [];
      first.payloads.forEach((p, i) => {
        if (p === null) return;
        counts.payloads++;
        const el = list[i] as { recordPayload: unknown };
        const want = canonicalize(el.recordPayload);
        if (p.canonical !== want) {
          failures++;
          t.fail(`run ${run}: canonical form differs from the reference`, { got: p.canonical, want });
        }
        if (run % 16 === 0) {
          for (const b of backends) {
            if (b.canonicalize(el.recordPayload) !== want) {
              failures++;
              t.fail(`run ${run}: ${b.name}.canonicalize differs`);
            }
          }
        }
      });
      if (run % 8 === 0) checkRecordHashes(t, backends, first, run);
    }
  }
  t.equal(failures, 0, 'no disagreement');
  t.comment(JSON.stringify(counts));
  t.ok(counts.rejected > 0 && counts.payloads > 0, 'both accepted and rejected documents were generated');
});

/** Equal values with members in the same order (isDeepStrictEqual tells -0 and Infinity apart). */
function sameValues(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b) && JSON.stringify(a) === JSON.stringify(b);
}

/** The value with each payload object of the records (single: the body) replaced by {}, from a deep copy. */
function expectedEnvelope(value: unknown, shape: 'single' | 'bulk'): unknown {
  if (value === undefined) return undefined;
  const copy = structuredClone(value);
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const strip = (el: unknown): void => {
    if (isObj(el) && Object.hasOwn(el, 'recordPayload') && isObj(el['recordPayload'])) el['recordPayload'] = {};
  };
  if (shape === 'single') strip(copy);
  else if (isObj(copy)) {
    const list = Array.isArray(copy['records']) ? copy['records'] : Array.isArray(copy['items']) ? copy['items'] : [];
    list.forEach(strip);
  }
  return copy;
}

function sameValue(v: unknown, body: Buffer): boolean {
  return JSON.stringify(v) === JSON.stringify(JSON.parse(body.toString('utf8')));
}

function checkRecordHashes(t: Test, backends: HashingBackend[], p: PreparedBody, run: number): void {
  const envelopes: RecordEnvelope[] = p.payloads
    .filter((x) => x !== null)
    .map((x, i) => ({
      hashScheme: 'dris-v1',
      tenantId: 'acme',
      database: `db ${run}`,
      collection: 'c\u00e9\ud83d\ude00',
      recordId: `r"${i}\n`,
      recordVersion: '1',
      operationType: 'upsert',
      sourceTimestamp: i % 2 === 0 ? null : '2024-01-01T00:00:00.000Z',
      payloadHash: x!.payloadHash,
      salt: '0123456789abcdef0123456789abcdef',
    }));
  const want = JSON.stringify(backends[0]!.recordHashes(envelopes));
  for (const b of backends.slice(1)) {
    if (JSON.stringify(b.recordHashes(envelopes)) !== want) t.fail(`run ${run}: recordHashes differ on ${b.name}`);
  }
}


t.test('targeted rejections agree, with the same codes and paths', async (t) => {
  const { backends } = await availableBackends();
  const cases: [string, [string, string][]][] = [
    ['{"recordPayload":{"a":1,"a":2}}', [['duplicate_key', 'recordPayload.a']]],
    ['{"recordPayload":{"n":9007199254740992}}', [['unsafe_integer', 'recordPayload.n']]],
    ['{"recordPayload":{"n":-9007199254740992}}', [['unsafe_integer', 'recordPayload.n']]],
    ['{"recordPayload":{"s":"\\ud800"}}', [['lone_surrogate', 'recordPayload.s']]],
    ['{"recordPayload":{"\\udc00 x":1}}', [['lone_surrogate', 'recordPayload["\\udc00 x"]']]],
    ['{"recordPayload":{"n":1e400}}', [['invalid_number', 'recordPayload.n']]],
    [`{"recordPayload":{"d":${'['.repeat(64)}${']'.repeat(64)}}}`, [['depth_exceeded', 'recordPayload.d' + '[0]'.repeat(62)]]],
    ['{"records":[{"recordPayload":{"ok":1}},{"recordPayload":{"x":{"y y":[0,{"z":1,"z":1}]}}}]}', [['duplicate_key', 'records[1].recordPayload.x["y y"][1].z']]],
    ['{"recordPayload":{"a":NaN}}', [['invalid_json', 'recordPayload.a']]],
  ];
  for (const [text, want] of cases) {
    const shape = text.startsWith('{"records"') ? 'bulk' : 'single';
    for (const b of backends) {
      const p = b.prepareBody(Buffer.from(text), shape);
      t.same(p.errors.map((e) => [e.code, e.path]), want, `${b.name}: ${text.slice(0, 60)}`);
    }
  }
  // Raw bytes: an encoded surrogate, and invalid UTF-8.
  for (const b of backends) {
    const raw = Buffer.concat([Buffer.from('{"recordPayload":{"s":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}}')]);
    t.same(b.prepareBody(raw, 'single').errors.map((e) => [e.code, e.path]), [['lone_surrogate', 'recordPayload.s']], `${b.name}: raw surrogate`);
    const bad = Buffer.concat([Buffer.from('{"recordPayload":{"s":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}')]);
    t.same(b.prepareBody(bad, 'single').errors.map((e) => [e.code, e.path]), [['invalid_json', 'recordPayload.s']], `${b.name}: invalid UTF-8`);
  }
});

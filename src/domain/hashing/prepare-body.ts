import type { FieldError } from '../../errors/dris-error.js';
import type { BodyShape, PreparedBody, PreparedPayload } from './port.js';
import { parseIJson } from './ijson.js';
import { payloadDigest, type Sha256Hex } from './record-hash.js';

/**
 * Body preparation shared by the JS-hosted backends: strict parse, then canonical form and
 * payloadHash of each record's payload that is an object and has no violation.
 */
export function prepareBody(body: Uint8Array, shape: BodyShape, sha256Hex: Sha256Hex): PreparedBody {
  const parsed = parseIJson(body);
  if (parsed.syntaxError) return new ParsedBody(undefined, shape, parsed.errors, []);
  const value = parsed.value;
  const paths = parsed.violationPaths;
  if (shape === 'single') {
    const bad = paths.some((p) => p === 'recordPayload' || p.startsWith('recordPayload.') || p.startsWith('recordPayload['));
    return new ParsedBody(value, shape, parsed.errors, [bad ? null : payloadOf(value, sha256Hex)]);
  }
  const { list, prefix } = recordList(value);
  const bad = paths.length === 0 ? undefined : affectedElements(paths, prefix);
  const payloads: (PreparedPayload | null)[] = new Array<PreparedPayload | null>(list.length);
  for (let i = 0; i < list.length; i++) payloads[i] = bad?.has(i) === true ? null : payloadOf(list[i], sha256Hex);
  return new ParsedBody(value, shape, parsed.errors, payloads);
}

/** A prepared body whose envelope is derived from its value on first read. */
class ParsedBody implements PreparedBody {
  private envelopeValue: unknown;
  private envelopeBuilt = false;

  constructor(
    readonly value: unknown,
    private readonly shape: BodyShape,
    readonly errors: readonly FieldError[],
    readonly payloads: readonly (PreparedPayload | null)[],
  ) {}

  get envelope(): unknown {
    if (!this.envelopeBuilt) {
      this.envelopeBuilt = true;
      this.envelopeValue = envelopeOf(this.value, this.shape);
    }
    return this.envelopeValue;
  }
}

/** The list of a bulk body whose elements carry the payloads: `records`, else `items`, else none. */
function recordList(value: unknown): { list: unknown[]; prefix: 'records' | 'items' | '' } {
  if (isObject(value)) {
    if (Array.isArray(value['records'])) return { list: value['records'], prefix: 'records' };
    if (Array.isArray(value['items'])) return { list: value['items'], prefix: 'items' };
  }
  return { list: [], prefix: '' };
}

/**
 * PreparedBody.envelope from a parsed body: the payload objects of the same elements `payloads`
 * covers become `{}`, by shallow copies along the way; `value` itself is never changed, and is
 * returned as is when it has no payload object.
 */
export function envelopeOf(value: unknown, shape: BodyShape): unknown {
  if (shape === 'single') return withoutPayload(value);
  const { list, prefix } = recordList(value);
  if (prefix === '') return value;
  let copy: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const el = list[i];
    const stripped = withoutPayload(el);
    if (stripped !== el) {
      copy ??= list.slice();
      copy[i] = stripped;
    }
  }
  return copy === undefined ? value : { ...(value as Record<string, unknown>), [prefix]: copy };
}

function withoutPayload(element: unknown): unknown {
  if (!isObject(element) || !Object.hasOwn(element, 'recordPayload') || !isObject(element['recordPayload'])) return element;
  return { ...element, recordPayload: {} };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function payloadOf(element: unknown, sha256Hex: Sha256Hex): PreparedPayload | null {
  if (!isObject(element) || !Object.hasOwn(element, 'recordPayload')) return null;
  const payload = element['recordPayload'];
  if (!isObject(payload)) return null;
  return payloadDigest(payload, sha256Hex);
}

/** Indices i whose `<prefix>[i].recordPayload` holds a violation. */
function affectedElements(paths: readonly string[], prefix: string): Set<number> {
  const out = new Set<number>();
  const head = prefix + '[';
  const tail = '].recordPayload';
  for (const p of paths) {
    if (!p.startsWith(head)) continue;
    const close = p.indexOf(']', head.length);
    if (close < 0 || !p.startsWith(tail, close)) continue;
    const end = close + tail.length;
    if (end < p.length && p[end] !== '.' && p[end] !== '[') continue;
    const digits = p.slice(head.length, close);
    if (/^\d+$/.test(digits)) out.add(Number(digits));
  }
  return out;
}

import type { BodyShape, PreparedBody, PreparedPayload } from './port.js';
import { parseIJson } from './ijson.js';
import { payloadDigest, type Sha256Hex } from './record-hash.js';

/**
 * Body preparation shared by the JS-hosted backends: strict parse, then canonical form and
 * payloadHash of each record's payload that is an object and has no violation.
 */
export function prepareBody(body: Uint8Array, shape: BodyShape, sha256Hex: Sha256Hex): PreparedBody {
  const parsed = parseIJson(body);
  if (parsed.syntaxError) return { value: undefined, errors: parsed.errors, payloads: [] };
  const value = parsed.value;
  const paths = parsed.violationPaths;
  if (shape === 'single') {
    const bad = paths.some((p) => p === 'recordPayload' || p.startsWith('recordPayload.') || p.startsWith('recordPayload['));
    return { value, errors: parsed.errors, payloads: [bad ? null : payloadOf(value, sha256Hex)] };
  }
  let list: unknown[] = [];
  let prefix = '';
  if (isObject(value)) {
    if (Array.isArray(value['records'])) {
      list = value['records'];
      prefix = 'records';
    } else if (Array.isArray(value['items'])) {
      list = value['items'];
      prefix = 'items';
    }
  }
  const bad = paths.length === 0 ? undefined : affectedElements(paths, prefix);
  const payloads: (PreparedPayload | null)[] = new Array<PreparedPayload | null>(list.length);
  for (let i = 0; i < list.length; i++) payloads[i] = bad?.has(i) === true ? null : payloadOf(list[i], sha256Hex);
  return { value, errors: parsed.errors, payloads };
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

import type { FieldError } from '../../errors/dris-error.js';
import { appendIndex, appendKey } from './json-path.js';
import { isWellFormed } from './well-formed.js';

/**
 * Strict I-JSON (RFC 7493) parsing of UTF-8 bytes. Returns the value JSON.parse would produce and
 * every violation of the hashing contract with its path, instead of stopping at the first.
 *
 * Two paths: JSON.parse plus a walk that only answers "certainly clean", and a complete reference
 * parser that runs whenever the walk has any doubt. Bodies in the hot path are clean, so they pay
 * for JSON.parse and one walk; the reference parser decides every code and path, so the two paths
 * cannot disagree on what is reported.
 *
 * The file is longer than the 400 lines others keep to: the reference parser is one recursive-descent
 * grammar over one cursor, and the fast walk must stay beside the parser whose verdicts it predicts.
 */

export type IJsonViolationCode =
  | 'invalid_json'
  | 'duplicate_key'
  | 'unsafe_integer'
  | 'lone_surrogate'
  | 'depth_exceeded'
  | 'invalid_number';

export const MAX_DEPTH = 64;
export const MAX_REPORTED_ERRORS = 100;

export interface IJsonResult {
  /** The parsed value; undefined after a syntax error. */
  readonly value: unknown;
  /** Violations in document order, at most MAX_REPORTED_ERRORS. */
  readonly errors: readonly FieldError[];
  /** Number of violations found, including those beyond the reported ones. */
  readonly errorCount: number;
  /** Path of every violation (not capped), so callers can tell which parts are affected. */
  readonly violationPaths: readonly string[];
  readonly syntaxError: boolean;
}

export interface IJsonOptions {
  /** Name of the root in paths; '' when paths start at the top-level members. */
  readonly root?: string;
  /** Skips the fast scanner (tests compare both paths). */
  readonly forceReference?: boolean;
}

const fatalDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenientDecoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

const CLEAN: IJsonResult = Object.freeze({
  value: undefined,
  errors: Object.freeze([]) as readonly FieldError[],
  errorCount: 0,
  violationPaths: Object.freeze([]) as readonly string[],
  syntaxError: false,
});

export function parseIJson(bytes: Uint8Array, options: IJsonOptions = {}): IJsonResult {
  const root = options.root ?? '';
  if (options.forceReference !== true) {
    const value = fastParse(bytes);
    if (value !== DOUBT) return { ...CLEAN, value };
  }
  return new ReferenceParser(bytes, root).parse();
}

/** Parses a JS string (encoded to UTF-8 first, so the rules are those of the bytes). */
export function parseIJsonText(text: string, options: IJsonOptions = {}): IJsonResult {
  return parseIJson(Buffer.from(text, 'utf8'), options);
}

const DOUBT: unique symbol = Symbol('doubt');
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * The fast path: V8's JSON.parse (strict RFC 8259 grammar) builds the value, then one walk of the
 * value proves it clean. Every check errs towards DOUBT, which hands the input to the reference
 * parser:
 * - invalid UTF-8 (including encoded surrogates): the fatal decoder throws;
 * - escaped lone surrogates survive into strings: isWellFormed;
 * - an integer literal beyond 2^53-1 or an overflowing number has |value| > 2^53-1 (a rounded
 *   unsafe integer never lands at or below it), so any such magnitude is a doubt;
 * - nesting: the walk counts depth;
 * - duplicate names collapse into one own property, so the value has fewer members than the text
 *   has name/value colons. Colons inside strings are told apart by counting them in the decoded
 *   strings, unless an escaped colon (\u003a) makes that count differ from the text's.
 */
function fastParse(bytes: Uint8Array): unknown {
  let text: string;
  let value: unknown;
  try {
    text = fatalDecoder.decode(bytes);
    value = JSON.parse(text);
  } catch {
    return DOUBT;
  }
  walkMembers = 0;
  if (!walkClean(value, 0)) return DOUBT;
  const members = walkMembers;
  let colons = 0;
  for (let i = text.indexOf(':'); i >= 0; i = text.indexOf(':', i + 1)) colons++;
  if (colons === members) return value;
  if (text.includes('\\u003a') || text.includes('\\u003A')) return DOUBT;
  return colons - colonsInStrings(value) === members ? value : DOUBT;
}

let walkMembers = 0;

/** Counts members into walkMembers; false on anything the reference parser must look at. */
function walkClean(v: unknown, depth: number): boolean {
  if (typeof v === 'string') return isWellFormed(v);
  if (typeof v === 'number') return v <= MAX_SAFE && v >= -MAX_SAFE;
  if (typeof v !== 'object' || v === null) return true;
  if (depth === MAX_DEPTH) return false;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (!walkClean(v[i], depth + 1)) return false;
    return true;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    walkMembers++;
    if (!isWellFormed(k) || !walkClean(o[k], depth + 1)) return false;
  }
  return true;
}

function colonsInStrings(v: unknown): number {
  if (typeof v === 'string') return countColons(v);
  if (typeof v !== 'object' || v === null) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) n += colonsInStrings(v[i]);
    return n;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) n += countColons(k) + colonsInStrings(o[k]);
  return n;
}

function countColons(s: string): number {
  let n = 0;
  for (let i = s.indexOf(':'); i >= 0; i = s.indexOf(':', i + 1)) n++;
  return n;
}

// Byte classes: each name stands for the code of the character at its place in the string.
const BYTE_CLASSES = '"\\,:{}[]-+.09';
const [QUOTE, BACKSLASH, COMMA, COLON, LBRACE, RBRACE, LBRACKET, RBRACKET, MINUS, PLUS, DOT, ZERO, NINE] = Array.from(BYTE_CLASSES, (c) => c.charCodeAt(0)) as [
  number, number, number, number, number, number, number, number, number, number, number, number, number,
];

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

function asciiSlice(b: Uint8Array, start: number, end: number): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(b[i]!);
  return s;
}

const enum Kind {
  Object = 1,
  Array = 2,
}

interface Frame {
  readonly kind: Kind;
  readonly path: string;
  readonly obj: Record<string, unknown> | unknown[];
  readonly keys: Set<string> | undefined;
  index: number;
  key: string;
}

class SyntaxFailure {
  constructor(readonly path: string) {}
}

/**
 * The complete parser: iterative (deep nesting cannot overflow the stack), decides every code and
 * path. Paths of syntax errors: the value being read when the error is inside a value (a string,
 * a number, a literal, or a character where a value was expected), else the innermost container.
 */
class ReferenceParser {
  private pos = 0;
  private readonly errors: FieldError[] = [];
  private readonly paths: string[] = [];
  private count = 0;

  constructor(
    private readonly b: Uint8Array,
    private readonly root: string,
  ) {}

  parse(): IJsonResult {
    let value: unknown;
    let syntaxError = false;
    try {
      value = this.document();
    } catch (e) {
      if (!(e instanceof SyntaxFailure)) throw e;
      syntaxError = true;
      value = undefined;
      this.violation(e.path, 'invalid_json', 'malformed JSON', true);
    }
    return { value, errors: this.errors, errorCount: this.count, violationPaths: this.paths, syntaxError };
  }

  private violation(path: string, code: IJsonViolationCode, message: string, always = false): void {
    this.count++;
    this.paths.push(path);
    if (this.errors.length < MAX_REPORTED_ERRORS || always) this.errors.push({ path, code, message });
  }

  private ws(): void {
    const b = this.b;
    let i = this.pos;
    while (i < b.length && isWs(b[i]!)) i++;
    this.pos = i;
  }

  private document(): unknown {
    const b = this.b;
    this.ws();
    const stack: Frame[] = [];
    let path = this.root;
    let value: unknown;
    for (;;) {
      // A value is expected at this.pos, with path `path`.
      if (this.pos >= b.length) throw new SyntaxFailure(path);
      const c = b[this.pos]!;
      if (c === LBRACE || c === LBRACKET) {
        const depth = stack.length + 1;
        if (depth === MAX_DEPTH + 1) this.violation(path, 'depth_exceeded', `nesting deeper than ${MAX_DEPTH} levels`);
        this.pos++;
        this.ws();
        if (c === LBRACE) {
          const frame: Frame = { kind: Kind.Object, path, obj: {}, keys: new Set(), index: 0, key: '' };
          if (this.pos < b.length && b[this.pos] === RBRACE) {
            this.pos++;
            value = frame.obj;
          } else {
            stack.push(frame);
            path = this.memberName(frame);
            continue;
          }
        } else {
          const frame: Frame = { kind: Kind.Array, path, obj: [], keys: undefined, index: 0, key: '' };
          if (this.pos < b.length && b[this.pos] === RBRACKET) {
            this.pos++;
            value = frame.obj;
          } else {
            stack.push(frame);
            path = appendIndex(frame.path, 0);
            continue;
          }
        }
      } else if (c === QUOTE) {
        this.pos++;
        value = this.string(path);
        if (this.lone) this.violation(path, 'lone_surrogate', 'unpaired UTF-16 surrogate');
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
        value = this.number(path);
      } else if (c === 0x74 && this.literal('true')) {
        value = true;
      } else if (c === 0x66 && this.literal('false')) {
        value = false;
      } else if (c === 0x6e && this.literal('null')) {
        value = null;
      } else {
        throw new SyntaxFailure(path);
      }
      // A value is complete: store it and find what comes next.
      for (;;) {
        this.ws();
        const frame = stack[stack.length - 1];
        if (frame === undefined) {
          if (this.pos !== b.length) throw new SyntaxFailure(this.root);
          return value;
        }
        if (frame.kind === Kind.Array) (frame.obj as unknown[]).push(value);
        else setMember(frame.obj as Record<string, unknown>, frame.key, value);
        if (this.pos >= b.length) throw new SyntaxFailure(frame.path);
        const d = b[this.pos]!;
        if (d === COMMA) {
          this.pos++;
          this.ws();
          if (frame.kind === Kind.Array) path = appendIndex(frame.path, ++frame.index);
          else path = this.memberName(frame);
          break;
        }
        if (d === (frame.kind === Kind.Object ? RBRACE : RBRACKET)) {
          this.pos++;
          stack.pop();
          value = frame.obj;
          continue;
        }
        throw new SyntaxFailure(frame.path);
      }
    }
  }

  /** Reads `"name" :` and returns the member's path. */
  private memberName(frame: Frame): string {
    const b = this.b;
    if (this.pos >= b.length || b[this.pos] !== QUOTE) throw new SyntaxFailure(frame.path);
    this.pos++;
    const key = this.string(frame.path);
    const path = appendKey(frame.path, key);
    if (this.lone) this.violation(path, 'lone_surrogate', 'unpaired UTF-16 surrogate');
    this.ws();
    if (this.pos >= b.length || b[this.pos] !== COLON) throw new SyntaxFailure(frame.path);
    this.pos++;
    this.ws();
    const keys = frame.keys!;
    if (keys.has(key)) this.violation(path, 'duplicate_key', 'duplicate member name');
    else keys.add(key);
    frame.key = key;
    return path;
  }

  private literal(word: string): boolean {
    const b = this.b;
    if (this.pos + word.length > b.length) return false;
    for (let k = 0; k < word.length; k++) if (b[this.pos + k] !== word.charCodeAt(k)) return false;
    this.pos += word.length;
    return true;
  }

  private number(path: string): number {
    const b = this.b;
    const start = this.pos;
    const i = scanNumberSyntax(b, start);
    if (i < 0) throw new SyntaxFailure(path);
    this.pos = i;
    let integer = true;
    for (let k = start; k < i; k++) {
      const c = b[k]!;
      if (c === DOT || c === 0x65 || c === 0x45) {
        integer = false;
        break;
      }
    }
    const v = Number(asciiSlice(b, start, i));
    if (integer) {
      if (!Number.isSafeInteger(v)) this.violation(path, 'unsafe_integer', 'integer beyond +-(2^53-1)');
    } else if (!Number.isFinite(v)) {
      this.violation(path, 'invalid_number', 'number out of the binary64 range');
    }
    return v;
  }

  /** Set by string(): whether the last string read holds an unpaired surrogate. */
  private lone = false;

  /** Reads a string body from after its opening quote; `path` is where a syntax error is reported. */
  private string(path: string): string {
    const b = this.b;
    const n = b.length;
    let i = this.pos;
    let out = '';
    let runStart = i;
    let lone = false;
    let rawSurrogates = false;
    const flush = (end: number): void => {
      if (end > runStart) out += rawSurrogates ? decodeWtf8(b, runStart, end) : lenientDecoder.decode(b.subarray(runStart, end));
    };
    for (;;) {
      if (i >= n) throw new SyntaxFailure(path);
      const c = b[i]!;
      if (c === QUOTE) {
        flush(i);
        this.pos = i + 1;
        break;
      }
      if (c < 0x20) throw new SyntaxFailure(path);
      if (c < 0x80) {
        if (c !== BACKSLASH) {
          i++;
          continue;
        }
        flush(i);
        const e = b[i + 1];
        let u: number;
        if (e === 0x75) {
          u = this.hex4(i + 2, path);
          i += 6;
          if (u >= 0xd800 && u <= 0xdbff && b[i] === BACKSLASH && b[i + 1] === 0x75) {
            const l = this.hex4(i + 2, path);
            if (l >= 0xdc00 && l <= 0xdfff) {
              out += String.fromCharCode(u, l);
              i += 6;
              runStart = i;
              continue;
            }
          }
          if (u >= 0xd800 && u <= 0xdfff) lone = true;
        } else {
          switch (e) {
            case QUOTE: u = 0x22; break;
            case BACKSLASH: u = 0x5c; break;
            case 0x2f: u = 0x2f; break;
            case 0x62: u = 0x08; break;
            case 0x66: u = 0x0c; break;
            case 0x6e: u = 0x0a; break;
            case 0x72: u = 0x0d; break;
            case 0x74: u = 0x09; break;
            default: throw new SyntaxFailure(path);
          }
          i += 2;
        }
        out += String.fromCharCode(u);
        runStart = i;
        continue;
      }
      // A UTF-8 sequence; encoded surrogates (ED A0..BF) are lone surrogates, anything else invalid is syntax.
      const len = utf8SequenceLength(b, i);
      if (len === 0) throw new SyntaxFailure(path);
      if (len < 0) {
        lone = true;
        rawSurrogates = true;
        i += 3;
      } else {
        i += len;
      }
    }
    this.lone = lone;
    return out;
  }

  private hex4(i: number, path: string): number {
    const b = this.b;
    if (i + 4 > b.length) throw new SyntaxFailure(path);
    const h0 = hexVal(b[i]!), h1 = hexVal(b[i + 1]!), h2 = hexVal(b[i + 2]!), h3 = hexVal(b[i + 3]!);
    if ((h0 | h1 | h2 | h3) < 0) throw new SyntaxFailure(path);
    return (h0 << 12) | (h1 << 8) | (h2 << 4) | h3;
  }
}

function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  // Assigning `__proto__` would change the prototype; JSON.parse makes it an own data property.
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

function scanNumberSyntax(b: Uint8Array, start: number): number {
  const n = b.length;
  let i = start;
  let c = 0;
  if (b[i] === MINUS) i++;
  if (i >= n) return -1;
  c = b[i]!;
  if (c === ZERO) i++;
  else if (c > ZERO && c <= NINE) {
    i++;
    while (i < n && (c = b[i]!) >= ZERO && c <= NINE) i++;
  } else return -1;
  if (i < n && b[i] === DOT) {
    i++;
    const f = i;
    while (i < n && (c = b[i]!) >= ZERO && c <= NINE) i++;
    if (i === f) return -1;
  }
  if (i < n && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < n && (b[i] === PLUS || b[i] === MINUS)) i++;
    const e = i;
    while (i < n && (c = b[i]!) >= ZERO && c <= NINE) i++;
    if (i === e) return -1;
  }
  return i;
}

/** Length of the well-formed UTF-8 sequence at i; -1 for an encoded surrogate (3 bytes); 0 if invalid. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  const c1 = b[i + 1] ?? 0;
  const cont1 = (c1 & 0xc0) === 0x80;
  if (c >= 0xc2 && c <= 0xdf) return cont1 ? 2 : 0;
  const c2 = b[i + 2] ?? 0;
  const cont2 = (c2 & 0xc0) === 0x80;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont1 || !cont2) return 0;
    if (c === 0xe0 && c1 < 0xa0) return 0;
    if (c === 0xed && c1 >= 0xa0) return -1;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const c3 = b[i + 3] ?? 0;
    if (!cont1 || !cont2 || (c3 & 0xc0) !== 0x80) return 0;
    if (c === 0xf0 && c1 < 0x90) return 0;
    if (c === 0xf4 && c1 > 0x8f) return 0;
    return 4;
  }
  return 0;
}

/** UTF-8 decoding that keeps encoded surrogates as code units (the value is reported anyway). */
function decodeWtf8(b: Uint8Array, start: number, end: number): string {
  let s = '';
  let i = start;
  while (i < end) {
    const c = b[i]!;
    if (c < 0x80) {
      s += String.fromCharCode(c);
      i++;
    } else if (c < 0xe0) {
      s += String.fromCharCode(((c & 0x1f) << 6) | (b[i + 1]! & 0x3f));
      i += 2;
    } else if (c < 0xf0) {
      s += String.fromCharCode(((c & 0x0f) << 12) | ((b[i + 1]! & 0x3f) << 6) | (b[i + 2]! & 0x3f));
      i += 3;
    } else {
      const cp = ((c & 0x07) << 18) | ((b[i + 1]! & 0x3f) << 12) | ((b[i + 2]! & 0x3f) << 6) | (b[i + 3]! & 0x3f);
      s += String.fromCodePoint(cp);
      i += 4;
    }
  }
  return s;
}

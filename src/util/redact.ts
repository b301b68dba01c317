/**
 * Credentials out of anything that may reach a log line. Hosted endpoints carry their secrets in
 * several places: userinfo (`https://user:pass@host`), the path (`/v3/<key>` of Infura,
 * `/v2/<key>` of Alchemy, `/<token>/` of QuickNode), the query (`?apikey=`), the fragment. What is
 * left (scheme, host, port, short path segments) is what an operator needs to tell endpoints apart.
 */

export const REDACTED = '***';

/** Query parameters whose value is a credential (case-insensitive, `_` and `-` ignored). */
const SECRET_PARAM = /^(x)?(api)?(key|token|secret|password|passwd|pass|pwd|auth|authorization|signature|sig|credential|credentials|accesstoken|apikey|accesskey|secretkey|privatekey|session|jwt|code)$/;

/**
 * A path segment that looks like a key: long, of characters keys are made of, with a digit or
 * very long. Words of an API path (`rpc`, `api`, `v0`, `eth`, `mainnet`) stay; a CID or an address
 * in a logged path is lost, which costs less than a leaked key.
 */
function secretSegment(seg: string): boolean {
  if (seg.length < 16) return false;
  if (!/^[A-Za-z0-9_~.=+%-]+$/.test(seg)) return false;
  return /[0-9]/.test(seg) || seg.length >= 24;
}

function secretParam(name: string): boolean {
  return SECRET_PARAM.test(name.toLowerCase().replace(/[-_]/g, ''));
}

/**
 * The URL with its credentials replaced by `***`; text that is not an absolute URL is returned
 * as `***` when it could still hold one (it has `@`, `?` or a secret-looking part), else as is.
 */
export function sanitizeUrl(raw: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  // `user:pass@host` parses as a URL of scheme `user:` with no host: treated as text.
  if (url === undefined || url.host === '') return /[@?#]/.test(raw) || raw.split(/[/:]/).some(secretSegment) ? REDACTED : raw;
  if (url.username !== '') url.username = REDACTED;
  if (url.password !== '') url.password = REDACTED;
  if (url.pathname !== '' && url.pathname !== '/') {
    url.pathname = url.pathname
      .split('/')
      .map((seg) => (secretSegment(seg) ? REDACTED : seg))
      .join('/');
  }
  if (url.search !== '') {
    const names = [...url.searchParams.keys()];
    const params = new URLSearchParams();
    for (const name of names) {
      for (const value of url.searchParams.getAll(name)) params.append(name, secretParam(name) || secretSegment(value) ? REDACTED : value);
    }
    url.search = params.toString();
  }
  if (url.hash !== '') url.hash = REDACTED;
  // URL encodes the `*` of the replacements in userinfo and path; they read better as written.
  return url.toString().replace(/%2A%2A%2A/gi, REDACTED);
}

/** A URL inside prose ends before a space, a quote, a bracket or a comma, and not on a full stop. */
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]{1,15}:\/\/[^\s"'<>`,;()[\]{}]+[^\s"'<>`,;()[\]{}.]/gi;
const BEARER_IN_TEXT = /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+/g;
/** `password=...`, `token: ...`, `"apiKey":"..."` in free text (error messages of clients). */
const ASSIGNMENT_IN_TEXT = /\b(password|passwd|pwd|token|secret|api[_-]?key|private[_-]?key|authorization)(["']?\s*[:=]\s*["']?)([^\s"',;&)}]+)/gi;

/** Free text (an error message, a stack) with every URL sanitised and bearer tokens removed. */
export function sanitizeText(text: string): string {
  if (text.length === 0) return text;
  return text
    .replace(URL_IN_TEXT, (u) => sanitizeUrl(u))
    .replace(BEARER_IN_TEXT, (_m, scheme: string) => `${scheme} ${REDACTED}`)
    .replace(ASSIGNMENT_IN_TEXT, (_m, name: string, sep: string) => `${name}${sep}${REDACTED}`);
}

/** Names of object members whose value is a credential wherever they appear. */
const SECRET_KEY = /^(authorization|cookie|set-cookie|x-api-key|apikey|api_key|token|admintoken|accesstoken|secret|password|passwd|pass|privatekey|private_key|anchorerkey|keystorepassword|mnemonic|seed|credentials|creds)$/i;

export function isSecretKey(name: string): boolean {
  return SECRET_KEY.test(name);
}

/**
 * A copy of a value for a log line: strings sanitised as text, members named like credentials
 * replaced, bounded in depth and breadth so a cyclic or huge object cannot stall a log call.
 */
export function sanitizeValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return sanitizeText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 6) return '[depth]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => sanitizeValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (++n > 100) break;
    out[k] = isSecretKey(k) ? REDACTED : sanitizeValue(v, depth + 1);
  }
  return out;
}

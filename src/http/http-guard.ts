import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DrisError, type DrisErrorCode } from '../errors/dris-error.js';
import type { Logger } from '../util/logger.js';

/**
 * The request-framing guard of native/src/http_guard: it checks every request head before
 * uWebSockets.js parses it and hands uWS, in place of a head to refuse, a request to a secret
 * path of this process. This module installs it and turns those requests back into refusals.
 */

export interface GuardLimits {
  readonly maxHeaderBytes: number;
  readonly maxHeaderFields: number;
  readonly headTimeoutMs: number;
  /** Largest body of any route. */
  readonly maxBodyBytes: number;
}

export interface HttpGuardStats {
  readonly connections: number;
  readonly heldBytes: number;
  readonly refused: number;
  readonly timedOut: number;
  readonly cut: number;
  readonly rewritten: number;
}

interface GuardAddon {
  httpGuardInstall(
    listenSocket: unknown,
    port: number,
    uwsModule: string,
    options: { maxHeadBytes: number; maxHeaderFields: number; headTimeoutMs: number; maxBodyBytes: number; answerPrefix: string },
  ): void;
  httpGuardStats(): HttpGuardStats | null;
}

interface Refusal {
  readonly code: DrisErrorCode;
  readonly field: string;
  readonly message: string;
}

/** `<status>/<reason>` of native/src/http_guard -> the error answered. */
const REFUSALS: Readonly<Record<string, Refusal>> = {
  '400/request_line': { code: 'malformed_request', field: 'request-line', message: 'must be `METHOD origin-form-target HTTP/1.x`' },
  '400/bare_lf': { code: 'malformed_request', field: 'head', message: 'lines must end with CRLF' },
  '400/header_name': { code: 'malformed_request', field: 'header', message: 'a field name is empty or has a character outside the RFC 9110 token set' },
  '400/header_value': { code: 'malformed_request', field: 'header', message: 'a field value has a control character' },
  '400/obs_fold': { code: 'malformed_request', field: 'header', message: 'obsolete line folding is not accepted' },
  '400/host': { code: 'malformed_request', field: 'host', message: 'an HTTP/1.1 request needs exactly one Host field' },
  '400/content_length': { code: 'malformed_request', field: 'content-length', message: 'must be one decimal number' },
  '400/content_length_conflict': { code: 'malformed_request', field: 'content-length', message: 'the Content-Length fields differ' },
  '400/framing_conflict': { code: 'malformed_request', field: 'transfer-encoding', message: 'Content-Length and Transfer-Encoding together' },
  '400/transfer_encoding': { code: 'malformed_request', field: 'transfer-encoding', message: 'must end with chunked, applied once' },
  '400/transfer_encoding_http10': { code: 'malformed_request', field: 'transfer-encoding', message: 'not allowed in an HTTP/1.0 request' },
  '408/head_timeout': { code: 'request_timeout', field: 'head', message: 'the request head did not arrive in time' },
  '413/content_length': { code: 'payload_too_large', field: 'content-length', message: 'exceeds the largest body any route accepts' },
  '431/head_too_large': { code: 'headers_too_large', field: 'head', message: 'the request line and fields exceed the limit' },
  '431/too_many_fields': { code: 'headers_too_large', field: 'head', message: 'too many header fields' },
  '501/method': { code: 'method_not_implemented', field: 'method', message: 'the method is not implemented by this server' },
  '501/transfer_coding': { code: 'method_not_implemented', field: 'transfer-encoding', message: 'only the chunked transfer coding is implemented' },
  '501/target_form': { code: 'method_not_implemented', field: 'request-line', message: 'neither tunnels (CONNECT) nor server-wide OPTIONS are implemented' },
  '505/version': { code: 'http_version_not_supported', field: 'request-line', message: 'only HTTP/1.x is served on this port' },
  '503/heads_held': { code: 'overloaded', field: 'head', message: 'the server holds as many incomplete request heads as it may' },
};

const FALLBACK: Refusal = { code: 'malformed_request', field: 'head', message: 'the request is malformed' };

const MESSAGES: Readonly<Partial<Record<DrisErrorCode, string>>> = {
  malformed_request: 'the request is malformed',
  request_timeout: 'the request head did not arrive in time',
  headers_too_large: 'the request head is too large',
  method_not_implemented: 'the request asks for something this server does not implement',
  http_version_not_supported: 'the HTTP version is not supported',
  overloaded: 'the server is at capacity; retry with backoff',
};

let warned = false;

/** The module file uws.js loads (the same path, so that dlopen finds the copy already loaded). */
function uwsBinary(): string {
  const entry = createRequire(import.meta.url).resolve('uWebSockets.js');
  return realpathSync(path.join(path.dirname(entry), '..', 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`));
}

function loadAddon(file: string | undefined): GuardAddon {
  if (file === undefined) throw new Error('the native addon is not built (npm run build:native)');
  const addon = createRequire(import.meta.url)(file) as Partial<GuardAddon>;
  if (typeof addon.httpGuardInstall !== 'function' || typeof addon.httpGuardStats !== 'function') throw new Error(`${file} predates the HTTP guard: rebuild it`);
  return addon as GuardAddon;
}

export class HttpGuard {
  private constructor(
    private readonly addon: GuardAddon,
    /** `/.dris-guard/<random>/`: only the guard can send requests there. */
    readonly prefix: string,
    private readonly limits: GuardLimits,
  ) {}

  /**
   * Installs the guard on the HTTP context of a uWS listen socket; null (and one warning per
   * process) when the native addon is missing, the server then runs without it. `addonFile` is
   * the native addon's path, found by the composition root (the HTTP edge loads no adapter).
   */
  static install(listenSocket: unknown, port: number, limits: GuardLimits, log: Logger, addonFile: string | undefined): HttpGuard | null {
    const prefix = `/.dris-guard/${randomBytes(16).toString('hex')}/`;
    try {
      const addon = loadAddon(addonFile);
      addon.httpGuardInstall(listenSocket, port, uwsBinary(), {
        maxHeadBytes: limits.maxHeaderBytes,
        maxHeaderFields: limits.maxHeaderFields,
        headTimeoutMs: limits.headTimeoutMs,
        maxBodyBytes: limits.maxBodyBytes,
        answerPrefix: prefix,
      });
      return new HttpGuard(addon, prefix, limits);
    } catch (err) {
      if (!warned) {
        warned = true;
        log.warn({ reason: (err as Error).message }, 'HTTP guard not installed: malformed or slow requests may get no answer until uWS closes them after about 10 s');
      }
      return null;
    }
  }

  /** The refusal a guard request stands for (its path is `<prefix><status>/<reason>`). */
  refusal(requestPath: string): DrisError {
    const key = requestPath.slice(this.prefix.length);
    const r = REFUSALS[key] ?? FALLBACK;
    const options = { fields: [{ path: r.field, code: key.slice(4) || 'malformed', message: r.message }] };
    if (r.code === 'payload_too_large') return new DrisError(r.code, `the declared body exceeds ${this.limits.maxBodyBytes} bytes`, { ...options, extra: { limitBytes: this.limits.maxBodyBytes } });
    return new DrisError(r.code, MESSAGES[r.code] ?? 'the request is malformed', options);
  }

  stats(): HttpGuardStats | null {
    return this.addon.httpGuardStats();
  }
}

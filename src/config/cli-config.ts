import path from 'node:path';
import { DEFAULT_ADMIN_PORT, readLogLevel, readNativeAddon } from './config.js';
import { Reader, type Env } from './reader.js';
import type { LogLevel } from './types.js';

/**
 * What the CLI's tools read of the environment besides `loadConfig`: each reads only its own
 * variables, so that `dris keys` or `dris queue check` runs where the service's full configuration
 * would not validate (another host, a shell without the engines' URLs).
 */

/** Where `dris keys` finds the administration listener and its token. */
export interface AdminClientConfig {
  /** DRIS_ADMIN_URL, else derived from DRIS_ADMIN_HOST / DRIS_ADMIN_PORT; undefined when the port is 0 (chosen at start). */
  readonly url?: string;
  /** DRIS_ADMIN_TOKEN, when set. */
  readonly token?: string;
  /** The file the service writes its admin token to when DRIS_ADMIN_TOKEN is unset. */
  readonly tokenFile: string;
}

export function loadAdminClientConfig(env: Env = process.env, cwd: string = process.cwd()): AdminClientConfig {
  const r = new Reader(env);
  const configuredHost = r.str('DRIS_ADMIN_HOST');
  // A wildcard bind is reached on loopback.
  const host = configuredHost === undefined || configuredHost === '0.0.0.0' || configuredHost === '::' ? '127.0.0.1' : configuredHost;
  const port = r.str('DRIS_ADMIN_PORT') ?? String(DEFAULT_ADMIN_PORT);
  const explicit = r.str('DRIS_ADMIN_URL');
  const derived = port === '0' ? undefined : `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const url = explicit ?? derived;
  const token = r.str('DRIS_ADMIN_TOKEN');
  return {
    ...(url === undefined ? {} : { url }),
    ...(token === undefined ? {} : { token }),
    tokenFile: path.resolve(cwd, r.str('DRIS_DATA_DIR') ?? './data', 'admin-token'),
  };
}

/** The data directory `dris queue` inspects when --data-dir is not given: DRIS_DATA_DIR, else ./data. */
export function loadDataDir(env: Env = process.env, cwd: string = process.cwd()): string {
  return path.resolve(cwd, new Reader(env).str('DRIS_DATA_DIR') ?? './data');
}

/** What a tool that hashes outside the service (`dris verify`) reads: the addon file and the log level. */
export interface ToolConfig {
  readonly nativeAddon?: string;
  readonly logLevel: LogLevel;
}

export function loadToolConfig(env: Env = process.env, cwd: string = process.cwd()): ToolConfig {
  const r = new Reader(env);
  const nativeAddon = readNativeAddon(r, cwd);
  // An invalid level is not worth refusing a tool run for: the default stands.
  const logLevel = readLogLevel(r);
  return { logLevel, ...(nativeAddon === undefined ? {} : { nativeAddon }) };
}

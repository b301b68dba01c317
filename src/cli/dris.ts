#!/usr/bin/env node
import '../config/threadpool.js';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config.js';
import { loadAdminClientConfig, loadToolConfig } from '../config/cli-config.js';
import { sanitizeText, sanitizeUrl } from '../util/redact.js';
import { parseArgsRefusal } from './arg-errors.js';
import type { DrisError } from '../errors/dris-error.js';
import { isDrisError } from '../errors/dris-error.js';

/**
 * `dris serve` runs the service; `dris keys ...` provisions API keys against a running service
 * through its administration listener (DRIS_ADMIN_HOST:DRIS_ADMIN_PORT, guarded by the admin token).
 */

const USAGE = `usage:
  dris serve                      start the service (configuration from the environment)
  dris migrate                    create or upgrade the hot index schema, then exit
  dris keys create --tenant T --client C [--level standard|premium|enterprise]
                   [--expires ISO-8601] [--also-tenants a,b]
  dris keys list [--tenant T]
  dris keys revoke <keyId>
  dris keys rotate <keyId> [--grace-seconds N]
  dris chain deploy [--anchorer ADDRESS]
                                  deploy the anchor contract on EVM_RPC_URL (dris chain --help)
  dris queue check|repair [--data-dir DIR] [--json]
                                  inspect or repair the durable logs of the data directory (dris queue --help)
  dris verify <receipt.json> --rpc URL [--payload FILE] [--ipfs-gateway URL] [--json] [--timeout-ms N]
                                  check a receipt without the service (dris verify --help)
  dris bench <scenario> [options] run a benchmark scenario, as npm run bench does (dris bench --help)
options of keys commands:
  --url URL            administration listener's base URL (default DRIS_ADMIN_URL, else
                       http://DRIS_ADMIN_HOST:DRIS_ADMIN_PORT, 127.0.0.1:8081)
  --admin-token TOKEN  admin token (default DRIS_ADMIN_TOKEN, else <DRIS_DATA_DIR>/admin-token)`;

function fail(message: string, code = 2): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

/** Exit status after a fatal storage fault (EX_IOERR): a supervisor restarts, and the start recovers from disk. */
const EXIT_STORAGE_FAILED = 74;
/** After a fatal storage fault: in-flight requests get their answers (503) for this long, then the service closes. */
const FATAL_GRACE_MS = 1000;
/** ...and the process exits after this long at most, whatever closing still waits for. */
const FATAL_EXIT_MS = 10_000;

async function serve(): Promise<void> {
  const cfg = loadConfig();
  // Every file dris creates under the data directory (queue segments hold full payloads) is the
  // service user's alone: 0600 files, 0700 directories, also for the engines it embeds.
  process.umask(0o077);
  const { startService } = await import('../main.js');
  const running = await startService(cfg);
  let stopping: 'signal' | 'fault' | null = null;
  const stop = (signal: string): void => {
    if (stopping === 'signal') {
      // A second signal (an impatient Ctrl-C): no more waiting.
      process.stderr.write(`received ${signal} again, exiting now\n`);
      process.exit(1);
    }
    if (stopping !== null) return;
    stopping = 'signal';
    process.stderr.write(`received ${signal}, stopping (at most ${cfg.ops.shutdownTimeoutMs} ms)\n`);
    // The bound of the whole stop: what has not closed by then is abandoned.
    setTimeout(() => {
      process.stderr.write(`dris: the graceful stop did not finish within DRIS_SHUTDOWN_TIMEOUT_MS (${cfg.ops.shutdownTimeoutMs} ms); exiting\n`);
      process.exit(1);
    }, cfg.ops.shutdownTimeoutMs);
    running.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  const fail = (err: DrisError): void => {
    if (stopping !== null) return;
    stopping = 'fault';
    process.stderr.write(`dris: ${err.code}: ${err.message}\nstopping; a restart recovers from what is on disk\n`);
    setTimeout(() => process.exit(EXIT_STORAGE_FAILED), FATAL_EXIT_MS);
    setTimeout(() => {
      running.close().then(
        () => process.exit(EXIT_STORAGE_FAILED),
        () => process.exit(EXIT_STORAGE_FAILED),
      );
    }, FATAL_GRACE_MS);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  void running.failed.then(fail);
}

async function migrate(): Promise<void> {
  const cfg = loadConfig();
  const { migrateIndex, rootLoggerOf } = await import('../main.js');
  rootLoggerOf(cfg);
  await migrateIndex(cfg);
}

interface KeyOptions {
  url?: string;
  'admin-token'?: string;
  tenant?: string;
  client?: string;
  level?: string;
  expires?: string;
  'also-tenants'?: string;
  'grace-seconds'?: string;
}

/** Where the administration listener is (--url, else configuration) and its token (--admin-token, else configuration, else its file). */
function adminTarget(opts: KeyOptions): { url: string; token: string } {
  const admin = loadAdminClientConfig();
  const url = opts.url ?? admin.url;
  if (url === undefined) {
    fail('DRIS_ADMIN_PORT is 0 (a free port chosen at start): pass --url or DRIS_ADMIN_URL with the port of the `admin listening` log line');
  }
  let token = opts['admin-token'] ?? admin.token;
  if (token === undefined || token === '') {
    try {
      token = readFileSync(admin.tokenFile, 'utf8').trim();
    } catch {
      fail(`no admin token: pass --admin-token, set DRIS_ADMIN_TOKEN, or run where ${admin.tokenFile} is readable`);
    }
  }
  return { url: url.replace(/\/+$/, ''), token };
}

async function call(target: { url: string; token: string }, method: string, route: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(`${target.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${target.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (err) {
    fail(`cannot reach the administration listener at ${sanitizeUrl(target.url)}: ${sanitizeText((err as Error).message)}`, 1);
  }
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: shown as text
  }
  if (!res.ok) fail(`${res.status}: ${typeof parsed === 'string' ? parsed : JSON.stringify(parsed)}`, 1);
  return parsed;
}

/** parseArgs's refusals (unknown or incomplete options) answered with the usage, exit 2; anything else rethrown. */
function usageOnArgError(err: unknown): never {
  const refusal = parseArgsRefusal(err);
  if (refusal !== undefined) fail(`dris: ${refusal}\n${USAGE}`);
  throw err;
}

async function keys(args: string[]): Promise<void> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        'admin-token': { type: 'string' },
        tenant: { type: 'string' },
        client: { type: 'string' },
        level: { type: 'string' },
        expires: { type: 'string' },
        'also-tenants': { type: 'string' },
        'grace-seconds': { type: 'string' },
      },
    });
  } catch (err) {
    usageOnArgError(err);
  }
  const { values, positionals } = parsed;
  const opts = values as KeyOptions;
  const [sub, id] = positionals;
  const target = adminTarget(opts);
  const print = (v: unknown): void => {
    process.stdout.write(`${JSON.stringify(v, null, 2)}\n`);
  };
  switch (sub) {
    case 'create': {
      if (opts.tenant === undefined || opts.client === undefined) fail('keys create needs --tenant and --client');
      const body: Record<string, unknown> = { tenantId: opts.tenant, clientId: opts.client, level: opts.level ?? 'standard' };
      if (opts.expires !== undefined) body['expiresAt'] = opts.expires;
      if (opts['also-tenants'] !== undefined) body['alsoTenants'] = opts['also-tenants'].split(',').map((s) => s.trim()).filter((s) => s !== '');
      print(await call(target, 'POST', '/admin/v1/keys', body));
      return;
    }
    case 'list':
      print(await call(target, 'GET', `/admin/v1/keys${opts.tenant === undefined ? '' : `?tenantId=${encodeURIComponent(opts.tenant)}`}`));
      return;
    case 'revoke':
      if (id === undefined) fail('keys revoke needs a keyId');
      print(await call(target, 'POST', `/admin/v1/keys/${encodeURIComponent(id)}/revoke`, {}));
      return;
    case 'rotate': {
      if (id === undefined) fail('keys rotate needs a keyId');
      const grace = opts['grace-seconds'] === undefined ? 0 : Number(opts['grace-seconds']);
      print(await call(target, 'POST', `/admin/v1/keys/${encodeURIComponent(id)}/rotate`, { graceSeconds: grace }));
      return;
    }
    default:
      fail(USAGE);
  }
}

/** The process's root logger for a tool command, at DRIS_LOG_LEVEL (the service's own configuration is not required). */
async function toolLogger(): Promise<void> {
  const { rootLoggerOf } = await import('../composition/root-logger.js');
  rootLoggerOf(loadToolConfig());
}

/** The tool commands, each loaded when it runs: arguments to exit status. */
const TOOLS: Record<'chain' | 'queue' | 'verify', () => Promise<(args: readonly string[]) => Promise<number>>> = {
  chain: async () => (await import('./chain-command.js')).chainCommand,
  queue: async () => (await import('./queue-command.js')).queueCommand,
  verify: async () => (await import('./verify-command.js')).verifyCommand,
};

async function mainCli(argv: string[]): Promise<void> {
  const [given, ...rest] = argv;
  const command = given ?? 'serve';
  switch (command) {
    case 'serve':
      return serve();
    case 'keys':
      return keys(rest);
    case 'migrate':
      return migrate();
    case 'chain':
    case 'queue':
    case 'verify': {
      await toolLogger();
      const run = await TOOLS[command]();
      process.exitCode = await run(rest);
      return;
    }
    case 'bench': {
      // The bench suite ships beside the service in the same build (dist/bench).
      // Exits at once: a run's children and engine sessions are closed, but nothing left over may keep it up.
      const { benchMain } = await import('../../bench/cli.js');
      process.exit(await benchMain(rest));
      break;
    }
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return;
    default:
      fail(USAGE);
  }
}

mainCli(process.argv.slice(2)).catch((err: unknown) => {
  if (isDrisError(err)) {
    const e: DrisError = err;
    process.stderr.write(`dris: ${e.code}: ${e.message}${e.cause instanceof Error ? ` (${e.cause.message})` : ''}\n`);
  } else {
    process.stderr.write(`dris: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  }
  process.exit(1);
});

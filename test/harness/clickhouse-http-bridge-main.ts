import { parseArgs } from 'node:util';
import { startClickHouseHttpBridge } from './clickhouse-http-bridge.js';

/**
 * The ClickHouse HTTP bridge as a process of its own (test-only; see clickhouse-http-bridge.ts):
 *
 *   node dist/test/harness/clickhouse-http-bridge-main.js --path DIR [--port 8123] [--host 127.0.0.1]
 *        [--user NAME:PASSWORD]... [--display-name NAME] [--max-queries N] [--statement-timeout-ms N]
 *
 * Without --user it accepts `default` with an empty password, as a fresh server does. Once
 * listening it prints one JSON line `{"msg":"listening","port":N,"url":"..."}` on stdout; SIGTERM
 * or SIGINT lets the statements admitted finish, closes the engine and exits 0.
 */

const USAGE = 'usage: clickhouse-http-bridge-main --path DIR [--port N] [--host H] [--user NAME:PASSWORD]... [--display-name NAME] [--max-queries N] [--statement-timeout-ms N]';

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer\n${USAGE}\n`);
    process.exit(2);
  }
  return n;
}

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        path: { type: 'string' },
        port: { type: 'string' },
        host: { type: 'string' },
        user: { type: 'string', multiple: true },
        'display-name': { type: 'string' },
        'max-queries': { type: 'string' },
        'statement-timeout-ms': { type: 'string' },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.path === undefined) {
    process.stderr.write(`--path is required\n${USAGE}\n`);
    process.exit(2);
  }
  let users: Map<string, string> | undefined;
  for (const spec of values.user ?? []) {
    const colon = spec.indexOf(':');
    users ??= new Map();
    users.set(colon === -1 ? spec : spec.slice(0, colon), colon === -1 ? '' : spec.slice(colon + 1));
  }
  const bridge = await startClickHouseHttpBridge({
    path: values.path,
    host: values.host ?? '127.0.0.1',
    port: positiveInt('port', values.port, 8123),
    ...(users === undefined ? {} : { users }),
    ...(values['display-name'] === undefined ? {} : { displayName: values['display-name'] }),
    maxQueries: positiveInt('max-queries', values['max-queries'], 256),
    statementTimeoutMs: positiveInt('statement-timeout-ms', values['statement-timeout-ms'], 120_000),
  });
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: bridge.port, url: bridge.url, version: bridge.engine.version })}\n`);
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    bridge.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`close failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`clickhouse-http-bridge: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

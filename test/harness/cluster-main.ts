import path from 'node:path';
import { parseArgs } from 'node:util';
import { startFleet, type Fleet } from './fleet.js';
import { leaveSignalsToCaller } from './servers.js';
import { repoRoot } from './service.js';

/**
 * `npm run cluster` (scripts/cluster.sh ensures the tools and builds, then runs this): the local
 * fleet in the foreground until Ctrl-C. Data under `.cluster/` of the clone unless --dir.
 */

const USAGE = `usage: npm run cluster -- [--dir DIR] [--fresh] [--port PORT]
  --dir DIR    data of every component (default: .cluster/ in the clone); kept between runs
  --fresh      wipe DIR first (a new chain, stream, index and keys)
  --port PORT  port of the load balancer (default 8080; 0 picks a free one)
CLICKHOUSE_URL (+ CLICKHOUSE_USER, CLICKHOUSE_PASSWORD, CLICKHOUSE_DATABASE) in the environment:
use that ClickHouse server instead of the test bridge over chDB.
Ctrl-C (SIGINT) or SIGTERM stops everything; a second one kills what is left at once.`;

const out = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

function parse(): { dir: string; fresh: boolean; port: number } {
  let values;
  try {
    ({ values } = parseArgs({ options: { dir: { type: 'string' }, fresh: { type: 'boolean' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help === true) {
    out(USAGE);
    process.exit(0);
  }
  const port = Number(values.port ?? '8080');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`--port must be a port number\n${USAGE}\n`);
    process.exit(2);
  }
  return { dir: path.resolve(values.dir ?? path.join(repoRoot, '.cluster')), fresh: values.fresh === true, port };
}

function clickhouseFromEnv(): { url: string; user?: string; password?: string; database?: string } | undefined {
  const env = process.env;
  const url = env['CLICKHOUSE_URL'];
  if (url === undefined || url === '') return undefined;
  return {
    url,
    ...(env['CLICKHOUSE_USER'] ? { user: env['CLICKHOUSE_USER'] } : {}),
    ...(env['CLICKHOUSE_PASSWORD'] ? { password: env['CLICKHOUSE_PASSWORD'] } : {}),
    ...(env['CLICKHOUSE_DATABASE'] ? { database: env['CLICKHOUSE_DATABASE'] } : {}),
  };
}

async function describe(fleet: Fleet): Promise<void> {
  const key = await fleet.createKey({ tenantId: 'demo', clientId: 'cluster' });
  out('');
  out(`dris fleet up (data: ${fleet.dir})`);
  out(`  URL      ${fleet.url}   (HAProxy, round robin over the api processes; stats ${fleet.lb.statsUrl})`);
  out(`  API key  ${key.apiKey}   (tenant demo, client cluster)`);
  out(`  admin    ${fleet.adminUrl}   token in ${path.join(fleet.dir, 'secrets.json')}`);
  out('  try      curl -s -H "X-API-Key: <key>" -H "content-type: application/json" \\');
  out(`             -d '{"tenantId":"demo","database":"d","collection":"c","recordId":"r1","recordPayload":{"a":1}}' ${fleet.url}/api/v1/records`);
  out('');
  for (const p of fleet.processes) {
    const h = p.handle;
    const ports = `${p.role === 'api' ? `port ${h.port}, admin ${h.adminPort}, ` : ''}ops ${h.opsPort}`;
    out(`  ${p.name.padEnd(11)} pid ${String(h.pid).padEnd(8)} ${ports.padEnd(37)} log ${path.join(fleet.dir, 'logs', `${p.name}.log`)}`);
  }
  out(`  nats       ${fleet.nats.nodes.map((n) => `${n.name} :${n.clientPort}`).join(', ')} (JetStream R3)`);
  out(`  redis      ${fleet.redis.url}`);
  out(`  clickhouse ${fleet.clickhouse.url}${fleet.clickhouse.bridge === null ? '' : ' (test bridge over chDB)'}`);
  out(`  kubo       ${fleet.kubo.apiUrl} (gateway ${fleet.kubo.gatewayUrl})`);
  out(`  anvil      ${fleet.chain.rpcUrl}, contract ${fleet.chain.contractAddress}`);
  out('');
  out('Ctrl-C stops everything.');
}

async function main(): Promise<void> {
  const args = parse();
  // Stopped here, in order (load balancer, api, indexers, anchorers, then the servers), not by the
  // harness's kill-on-signal hooks.
  leaveSignalsToCaller();
  let fleet: Fleet | null = null;
  let signals = 0;
  let firstSignalAt = 0;
  let starting = true;
  const onSignal = (signal: NodeJS.Signals): void => {
    // A terminal's Ctrl-C may arrive twice at once (from the terminal and passed on by npm): once.
    if (signals > 0 && Date.now() - firstSignalAt < 2000) return;
    signals += 1;
    firstSignalAt = Date.now();
    if (signals > 1 || starting) {
      // A second signal, or one during start-up: everything is killed by the exit hooks.
      out(`${signal}: killing what is left`);
      process.exit(130);
    }
    out(`${signal}: stopping the fleet (again to kill at once)`);
    const running = fleet;
    if (running === null) process.exit(130);
    running.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`stopping failed: ${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
  const clickhouse = clickhouseFromEnv();
  fleet = await startFleet({ dir: args.dir, fresh: args.fresh, port: args.port, ...(clickhouse === undefined ? {} : { clickhouse }), log: (line) => out(`cluster: ${line}`) });
  starting = false;
  for (const p of fleet.processes) {
    void p.handle.exited.then(({ code, signal }) => {
      if (signals === 0) out(`cluster: ${p.name} exited (${code ?? signal}); see its log`);
    });
  }
  await describe(fleet);
}

main().catch((err: unknown) => {
  process.stderr.write(`cluster: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

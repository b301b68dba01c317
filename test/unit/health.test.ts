import t from 'tap';
import { HealthMonitor, type HealthInputs, type Probe } from '../../src/app/health.js';
import { DrisError } from '../../src/errors/dris-error.js';

const RPC = 'https://user:pw@rpc.internal.example:8545/v3/0123456789abcdef0123456789abcdef';

function inputs(probes: Probe[], over: Partial<HealthInputs> = {}): HealthInputs {
  return {
    version: '1.2.3',
    startedAtMs: 0,
    roles: ['api', 'indexer', 'anchorer'],
    hashBackend: { active: 'wasm', requested: 'auto', unavailable: { native: "Cannot find module '/opt/dris/native/index.node'" } },
    http: { engine: 'uWebSockets.js', native: true },
    probes,
    timeoutMs: 50,
    chain: { chainId: 31337, contractAddress: '0x' + '1'.repeat(40), anchorer: '0x' + '2'.repeat(40), rpcUrl: RPC },
    ...over,
  };
}

function counting(name: string, result: () => Promise<void | 'degraded'>): Probe & { runs: number } {
  const p = {
    name,
    adapter: `${name}-adapter`,
    runs: 0,
    check: () => {
      p.runs += 1;
      return result();
    },
  };
  return p;
}

t.test('concurrent callers share one probe run; a report is answered again for a second', async (t) => {
  let now = 10_000;
  let release: () => void = () => undefined;
  const slow = counting('queue', () => new Promise<void>((r) => (release = r)));
  const monitor = new HealthMonitor(inputs([slow], { now: () => now, timeoutMs: 5000 }));
  const callers = Array.from({ length: 50 }, () => monitor.publicReport());
  release();
  const reports = await Promise.all(callers);
  t.equal(slow.runs, 1, 'fifty callers, one run');
  t.ok(reports.every((r) => r.status === 'ok'));
  now += 999;
  await monitor.report();
  t.equal(slow.runs, 1, 'within the second: the same report');
  now += 1;
  const again = monitor.report();
  release();
  await again;
  t.equal(slow.runs, 2, 'a second later: probed again');
});

t.test('the public view: statuses and harmless facts only, also when components are down', async (t) => {
  const monitor = new HealthMonitor(
    inputs([
      { name: 'queue', adapter: 'nats', check: () => Promise.resolve() },
      { name: 'ipfs', adapter: 'kubo', check: () => Promise.reject(new Error(`connect ECONNREFUSED ${RPC}`)) },
      { name: 'chain', adapter: 'json-rpc', check: () => Promise.reject(new DrisError('dependency_unavailable', `no answer from ${RPC}`)) },
      { name: 'index', adapter: 'chdb', check: () => new Promise<void>(() => undefined) },
      { name: 'storage', adapter: 'disk', check: () => Promise.resolve({ status: 'degraded' as const, reason: 'disk_budget_exceeded' }) },
    ]),
  );
  const pub = await monitor.publicReport();
  t.same(pub, {
    status: 'degraded',
    version: '1.2.3',
    roles: ['api', 'indexer', 'anchorer'],
    hashBackend: { active: 'wasm', requested: 'auto' },
    dependencies: { queue: { status: 'ok' }, ipfs: { status: 'down' }, chain: { status: 'down' }, index: { status: 'down' }, storage: { status: 'degraded' } },
    chain: { chainId: 31337, contractAddress: '0x' + '1'.repeat(40), anchorer: '0x' + '2'.repeat(40) },
  });
  const text = JSON.stringify(pub);
  for (const leak of ['://', 'ECONNREFUSED', 'rpc.internal', 'index.node', 'nats', 'kubo', 'latency']) t.notOk(text.includes(leak), leak);

  const detail = await monitor.report();
  t.match(detail.dependencies, {
    queue: { status: 'ok', adapter: 'nats' },
    ipfs: { status: 'down', adapter: 'kubo', error: 'unavailable' },
    chain: { status: 'down', error: 'dependency_unavailable' },
    index: { status: 'down', error: 'timeout' },
    storage: { status: 'degraded', error: 'disk_budget_exceeded' },
  });
  t.notOk(JSON.stringify(detail.dependencies).includes('ECONNREFUSED'), 'even the detail holds codes, not messages');
  t.equal(detail.chain?.rpcUrl, RPC, 'the detailed view (admin only) names the node');
});

t.test('a declared public RPC URL is shown; with every component ok the status is ok', async (t) => {
  const base = inputs([{ name: 'queue', adapter: 'embedded', check: () => Promise.resolve('ok' as const) }]);
  const monitor = new HealthMonitor({ ...base, chain: { ...(base.chain as NonNullable<HealthInputs['chain']>), publicRpcUrl: 'https://rpc.example.org' } });
  const pub = await monitor.publicReport();
  t.equal(pub.status, 'ok');
  t.equal(pub.chain?.rpcUrl, 'https://rpc.example.org');
});

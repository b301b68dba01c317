import { execFileSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { run } from '../harness/deploy-tools.js';
import { startFleet, type Fleet } from '../harness/fleet.js';
import { parseExposition } from '../harness/prom-text.js';
import { eventually, repoRoot } from '../harness/service.js';

/**
 * Every process of a small fleet (one api, one indexer, two anchorers) serves its ops port: ready,
 * its role's series and no other role's, and an exposition `promtool check metrics` accepts (the
 * deployment's check-metrics.sh on every role's live /metrics). HAProxy found the api process UP
 * through its /readyz. A leader stopped with SIGTERM releases its lease: the other anchorer leads
 * long before the lease (a minute here) could have lapsed.
 */

let fleet: Fleet;
const LEASE_MS = 60_000;

t.before(async () => {
  fleet = await startFleet({ apis: 1, indexers: 1, anchorers: 2, env: { DRIS_LEADER_LEASE_MS: String(LEASE_MS) } });
});
t.teardown(() => fleet.stop());

/** Series each role must serve, and series of other roles it must not. */
const EXPECTED: Record<string, { has: string[]; lacks: string[] }> = {
  api: { has: ['dris_http_requests_total', 'dris_records_accepted_total', 'dris_verifications_total'], lacks: ['dris_records_indexed_total', 'dris_leader'] },
  indexer: { has: ['dris_records_indexed_total', 'dris_queue_lag_messages'], lacks: ['dris_http_requests_total', 'dris_leader'] },
  anchorer: { has: ['dris_leader', 'dris_leader_epoch', 'dris_batches_formed_total', 'dris_queue_lag_messages'], lacks: ['dris_http_requests_total', 'dris_records_indexed_total'] },
};

void t.test('every process is ready and serves the metrics of its role', async (t) => {
  t.equal(fleet.processes.length, 4);
  for (const p of fleet.processes) {
    const ops = p.handle.opsUrl;
    t.equal(String(p.handle.opsPort), p.env['DRIS_OPS_PORT'], `${p.name}: the ops port the fleet gave it`);
    t.equal((await fetch(`${ops}/livez`)).status, 200, `${p.name} /livez`);
    const ready = await eventually(async () => {
      const r = await fetch(`${ops}/readyz`);
      return r.status === 200 ? ((await r.json()) as unknown) : undefined;
    }, 30_000, 250);
    t.same(ready, { status: 'ready' }, `${p.name} /readyz`);
    const res = await fetch(`${ops}/metrics`);
    t.equal(res.status, 200, `${p.name} /metrics`);
    const x = parseExposition(await res.text());
    t.equal(x.find('dris_build_info', { roles: p.role }).length, 1, `${p.name} names its role`);
    const want = EXPECTED[p.role];
    if (want === undefined) throw new Error(`no expectation for ${p.role}`);
    for (const name of want.has) t.ok(x.types.has(name), `${p.name} serves ${name}`);
    for (const name of want.lacks) t.notOk(x.types.has(name), `${p.name} does not serve ${name}`);
  }
  const leader = await leaderByMetrics();
  t.ok(leader.epoch >= 1, `one anchorer leads (${leader.name}), with its epoch`);
  t.same([...(await fleet.lb.serverStatus()).values()], ['UP'], "HAProxy checks the api process's /readyz and finds it UP");
});

/** The one anchorer whose dris_leader is 1, polled until there is exactly one. */
async function leaderByMetrics(timeoutMs = 30_000): Promise<{ name: string; epoch: number }> {
  return eventually(async () => {
    const leading: { name: string; epoch: number }[] = [];
    for (const p of fleet.byRole('anchorer').filter((a) => a.running)) {
      const x = parseExposition(await (await fetch(`${p.handle.opsUrl}/metrics`)).text());
      if (x.value('dris_leader') === 1) leading.push({ name: p.name, epoch: x.value('dris_leader_epoch') ?? 0 });
    }
    return leading.length === 1 ? leading[0] : undefined;
  }, timeoutMs, 250);
}

void t.test('SIGTERM to the leader: it exits 0 and its lease is released, so the other anchorer leads at once', async (t) => {
  const before = await leaderByMetrics();
  const leader = fleet.byRole('anchorer').find((p) => p.name === before.name);
  if (leader === undefined) throw new Error('the leader is gone');
  const handle = leader.handle;
  const stoppedAt = Date.now();
  await leader.stop(LEASE_MS);
  t.same(await handle.exited, { code: 0, signal: null }, 'a graceful exit');
  // Campaigns run every fifth of the lease (12 s here): well within the lease, not after it.
  const after = await leaderByMetrics(LEASE_MS / 2);
  t.not(after.name, before.name);
  t.ok(after.epoch > before.epoch, 'a new term');
  t.ok(Date.now() - stoppedAt < LEASE_MS, 'taken over before the released lease could have lapsed');
  await leader.start();
});

void t.test('promtool check metrics passes on every role', async (t) => {
  const promtool = execFileSync('bash', [path.join(repoRoot, 'scripts', 'tools.sh'), 'promtool'], { encoding: 'utf8', timeout: 30 * 60_000 }).trim();
  const urls = fleet.processes.map((p) => `${p.handle.opsUrl}/metrics`);
  const r = await run('bash', [path.join(repoRoot, 'deploy', 'prometheus', 'check-metrics.sh'), ...urls], { env: { PROMTOOL: promtool } });
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.equal(r.stdout.split('\n').filter((l) => l.startsWith('ok ')).length, urls.length);
});

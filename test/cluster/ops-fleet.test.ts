import { execFileSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { run } from '../harness/deploy-tools.js';
import { startFleet, type Fleet } from '../harness/fleet.js';
import { parseExposition } from '../harness/prom-text.js';
import { eventually, repoRoot } from '../harness/service.js';

/**
 * Every process of a small fleet (one api, one indexer, one anchorer) serves its ops port: ready,
 * its role's series and no other role's, and an exposition `promtool check metrics` accepts (the
 * deployment's check-metrics.sh on every role's live /metrics). HAProxy found the api process UP
 * through its /readyz.
 */

let fleet: Fleet;

t.before(async () => {
  fleet = await startFleet({ apis: 1, indexers: 1, anchorers: 1 });
});
t.teardown(() => fleet.stop());

/** Series each role must serve, and series of other roles it must not. */
const EXPECTED: Record<string, { has: string[]; lacks: string[] }> = {
  api: { has: ['dris_http_requests_total', 'dris_records_accepted_total', 'dris_verifications_total'], lacks: ['dris_records_indexed_total', 'dris_leader'] },
  indexer: { has: ['dris_records_indexed_total', 'dris_queue_lag_messages'], lacks: ['dris_http_requests_total', 'dris_leader'] },
  anchorer: { has: ['dris_leader', 'dris_leader_epoch', 'dris_batches_formed_total', 'dris_queue_lag_messages'], lacks: ['dris_http_requests_total', 'dris_records_indexed_total'] },
};

void t.test('every process is ready and serves the metrics of its role', async (t) => {
  t.equal(fleet.processes.length, 3);
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
  const anchorer = fleet.byRole('anchorer')[0];
  if (anchorer === undefined) throw new Error('no anchorer');
  const leading = await eventually(async () => {
    const x = parseExposition(await (await fetch(`${anchorer.handle.opsUrl}/metrics`)).text());
    return x.value('dris_leader') === 1 ? x : undefined;
  }, 30_000, 250);
  t.ok((leading.value('dris_leader_epoch') ?? 0) >= 1, 'the only anchorer leads, with its epoch');
  t.same([...(await fleet.lb.serverStatus()).values()], ['UP'], "HAProxy checks the api process's /readyz and finds it UP");
});

void t.test('promtool check metrics passes on every role', async (t) => {
  const promtool = execFileSync('bash', [path.join(repoRoot, 'scripts', 'tools.sh'), 'promtool'], { encoding: 'utf8', timeout: 30 * 60_000 }).trim();
  const urls = fleet.processes.map((p) => `${p.handle.opsUrl}/metrics`);
  const r = await run('bash', [path.join(repoRoot, 'deploy', 'prometheus', 'check-metrics.sh'), ...urls], { env: { PROMTOOL: promtool } });
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.equal(r.stdout.split('\n').filter((l) => l.startsWith('ok ')).length, urls.length);
});

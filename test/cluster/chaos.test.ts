import { cp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startFleet, type Fleet } from '../harness/fleet.js';
import { anchorContract, assertGapFreeAnchors } from '../harness/pipeline.js';
import { batchesAndManifests, count, leafCounts, readRetries, rootMismatches, waitSettled } from './chaos-check.js';
import { FAULTS, schedule } from './chaos-faults.js';
import { planLoad, startLoad, type Tenant } from './chaos-load.js';

/**
 * The chaos run: 100 000 records through the local fleet's load balancer (single and bulk
 * requests, two tenants, every second request with an Idempotency-Key) while an api process, an
 * indexer, the leading anchorer, one NATS node, Redis and anvil are SIGKILLed in turn and
 * restarted. Then, from outside: no acknowledged record lost, none twice in the index, each in
 * exactly one Anchored batch, batchSeq without gaps, one transaction per batch, and the leader's
 * failover within a lease and five seconds.
 *
 * CHAOS_RECORDS overrides the count (a shorter run while working on it; the test command uses
 * the default).
 */

const RECORDS = Number(process.env['CHAOS_RECORDS'] ?? '100000');
const LEASE_MS = 5000;

// About five minutes on a busy 2-core machine; the bound is what the runner allows this file.
t.setTimeout(540_000);

/** How often each warning or error message of a role's processes was logged (every run of each). */
async function warnings(fleet: Fleet, role: 'api' | 'indexer' | 'anchorer'): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const p of fleet.byRole(role)) {
    const text = await readFile(path.join(fleet.dir, 'logs', `${p.name}.log`), 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const rec = JSON.parse(line) as { level?: number; msg?: string };
      if ((rec.level ?? 0) >= 40) out.set(rec.msg ?? '', (out.get(rec.msg ?? '') ?? 0) + 1);
    }
  }
  return out;
}

t.test('chaos: SIGKILLs across the fleet lose, duplicate and double-anchor nothing acknowledged', { timeout: 530_000 }, async (t) => {
  const fleet: Fleet = await startFleet({
    env: {
      DRIS_LEADER_LEASE_MS: String(LEASE_MS),
      DRIS_BATCH_MAX_WAIT_MS: '1000',
      DRIS_RATE_LIMITS: 'standard=100000000,premium=100000000,enterprise=100000000',
      // A crashed request's key is free again soon; lost anchors are looked for every 10 s.
      DRIS_IDEMPOTENCY_LEASE_MS: '3000',
      DRIS_ANCHOR_RECONCILE_INTERVAL_MS: '10000',
      DRIS_ANCHOR_RETRY_BASE_MS: '500',
      DRIS_ANCHOR_RETRY_MAX_MS: '5000',
      DRIS_ANCHOR_MAX_ATTEMPTS: '1000',
      // DRIS_CHAIN_TX_TIMEOUT_MS stays at its default (10 min): anchors lost with the blocks anvil's
      // SIGKILL takes are found by the chain adapter's rewind check, not by waiting them out.
    },
  });
  t.teardown(async () => {
    // A failed run keeps every process's log for diagnosis (the fleet's directory is removed).
    if (!t.passing()) {
      const kept = path.join(tmpdir(), `dris-chaos-logs-${Date.now()}`);
      await cp(path.join(fleet.dir, 'logs'), kept, { recursive: true }).then(
        () => t.comment(`chaos: the fleet's logs are kept in ${kept}`),
        () => undefined,
      );
    }
    await fleet.stop();
  });
  const tenants: Tenant[] = [];
  for (const tenantId of ['acme', 'globex']) tenants.push({ tenantId, apiKey: (await fleet.createKey({ tenantId, clientId: 'chaos' })).apiKey });
  const reader = await fleet.createKey({ tenantId: 'acme', clientId: 'auditor', alsoTenants: ['globex'] });

  const plan = planLoad(tenants, RECORDS, { bulkSize: 500, singleShare: 0.1, keyEvery: 2 });
  const faults = schedule(fleet, FAULTS, [0.08, 0.2, 0.32, 0.44, 0.56, 0.68], 0.06);
  const started = Date.now();
  const load = startLoad(plan, { url: fleet.url, concurrency: { single: 8, bulk: 2 }, unitDeadlineMs: 120_000, gate: (kind, share) => faults.gate(kind, share) });
  const [done, happened] = await Promise.all([load.done, faults.run(load.progress)]);
  const loadSeconds = (Date.now() - started) / 1000;
  for (const f of happened) {
    const extra = [f.failoverMs === undefined ? '' : `, failover ${(f.failoverMs / 1000).toFixed(1)} s`, f.detail === undefined ? '' : `, ${f.detail}`].join('');
    t.comment(`fault: ${f.name}: back after ${(f.downMs / 1000).toFixed(1)} s${extra}`);
  }
  t.equal(happened.length, FAULTS.length, 'every fault ran during the load');

  const settled = await waitSettled(fleet.url, tenants, done.acknowledged, 180_000);
  t.ok(settled.settled, `every acknowledged record indexed and every record anchored (${settled.seconds.toFixed(0)} s after the load)`);
  const batchIds = [...new Set(settled.records.map((r) => r.batchId).filter((b): b is string => b !== null))];
  const { batches, manifests } = await batchesAndManifests(fleet.url, reader.apiKey, fleet.kubo.apiUrl, batchIds);
  const counts = count(done.acknowledged, settled.records, leafCounts(batches, manifests));
  const failover = happened.find((f) => f.failoverMs !== undefined)?.failoverMs;

  const summary = {
    records: plan.records,
    acknowledged: counts.acknowledged,
    found: counts.found,
    anchored: counts.anchored,
    lost: counts.lost,
    duplicated: counts.duplicated,
    failoverSeconds: failover === undefined ? null : Number((failover / 1000).toFixed(2)),
    unknown: done.counts.unknown,
    failed: done.counts.failed,
    retries: done.counts.retries,
    batches: batches.length,
    readRetries: readRetries.length,
    loadSeconds: Number(loadSeconds.toFixed(1)),
    statuses: done.counts.statuses,
  };
  t.comment(`chaos: acknowledged ${summary.acknowledged}, found ${summary.found}, anchored ${summary.anchored}, lost ${summary.lost}, duplicated ${summary.duplicated}, failover ${summary.failoverSeconds ?? '-'} s`);
  t.comment(`chaos: ${JSON.stringify(summary)}`);
  if (readRetries.length > 0) t.comment(`reads tried again: ${[...new Set(readRetries)].join('; ')}`);
  // What the faults made the processes say: retries, failovers, reconciliation of lost anchors.
  for (const role of ['api', 'indexer', 'anchorer'] as const) {
    const said = [...(await warnings(fleet, role)).entries()].map(([msg, n]) => `${n}x ${msg}`);
    t.comment(`${role} warnings: ${said.length === 0 ? 'none' : said.join('; ')}`);
  }

  // Most records get through: a run where the faults refused nearly everything proves nothing.
  t.ok(counts.acknowledged >= RECORDS * 0.9, `at least 90 % of ${RECORDS} acknowledged (${counts.acknowledged})`);
  t.equal(counts.lost, 0, 'no acknowledged record lost');
  t.equal(counts.found, counts.acknowledged, 'every acknowledged record is in the index with the hash its 202 gave');
  t.equal(counts.duplicated, 0, 'no record twice in the index');
  t.equal(counts.anchoredTwice, 0, 'no acknowledged record in two batches');
  t.equal(counts.anchored, counts.acknowledged, 'every acknowledged record in exactly one Anchored batch');
  t.same(
    batches.filter((b) => b.status !== 'Anchored').map((b) => `${b.batchId}:${b.status}`),
    [],
    'every batch Anchored',
  );
  t.same(rootMismatches(batches, manifests), [], 'every manifest gives its batch root');
  t.equal(manifests.length, batches.length, 'a manifest for every batch');
  const chain = await anchorContract(fleet.chain.rpcUrl, fleet.chain.contractAddress);
  t.teardown(() => chain.close());
  const events = await assertGapFreeAnchors(t, batches, chain);
  t.same(
    events.map((e) => e.merkleRoot),
    batches.map((b) => b.merkleRoot),
    'each Anchored event carries its batch root',
  );
  t.same(
    events.map((e) => e.txHash),
    batches.map((b) => b.chainTxHash),
    'each batch names the transaction of its event',
  );
  t.ok(failover !== undefined && failover <= LEASE_MS + 5000, `leader failover ${failover ?? '?'} ms <= lease ${LEASE_MS} ms + 5 s`);
});

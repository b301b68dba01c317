import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ChdbSqlRunner } from '../../src/adapters/clickhouse/chdb-runner.js';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { fenceTerm } from '../../src/app/leader-loop.js';
import { formBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { Leadership } from '../../src/domain/pipeline/ports.js';
import type { LifecycleEntry, Snapshot } from '../../src/domain/pipeline/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { sampleRecord } from '../harness/records.js';

/**
 * The store's fence against a stale leader, on the embedded engine: rows written through a store
 * fenced by an older epoch never replace (nor, in a lifecycle, follow) those of a newer one,
 * whatever their clocks say, before and after the engine merges the parts.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-epoch-'));
const path = join(root, 'clickhouse');
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const { backend: hashing } = await loadHashingBackend('js');
const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path } });
await index.database.migrate();
const raw = new ChdbSqlRunner(path, 30_000);
t.teardown(async () => {
  await raw.close();
  await index.close();
});

const BASE_MS = Date.parse('2025-06-01T00:00:00.000Z');
const records = Array.from({ length: 3 }, (_, i) => ({
  ...sampleRecord(i),
  tenantId: 'acme',
  ingestId: `01JEPOCH00000000000000000${i}`,
  recordHash: hashing.sha256Hex(Buffer.from(`epoch-${i}`)),
  acceptedAt: new Date(BASE_MS + i).toISOString(),
}));
const formed = formBatch(records, hashing, BASE_MS + 10);
const TX = `0x${'ab'.repeat(32)}`;

function entries(snapshots: readonly Snapshot[], state: LifecycleEntry['state'], atMs: number, reason: string): LifecycleEntry[] {
  return snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state, atMs, reason, attempt: 1 }));
}

void t.test('a stale leader cannot overwrite what its successor wrote', async (t) => {
  const store = new ClickHousePipelineStore(index.database);
  t.equal(await store.highestEpoch(), 0, 'nothing fenced stored yet');
  const stale = store.fenced(5);
  const current = store.fenced(6);
  await stale.saveFormedBatches([formed]);
  t.equal(await store.highestEpoch(), 5);

  // The successor anchors the batch...
  const anchoredAt = Date.now();
  await current.putSnapshots(
    formed.snapshots.map((s) => ({ ...s, status: 'Anchored', merkleRoot: formed.batch.merkleRoot, anchorTimestampMs: anchoredAt, onChainConfirmed: true, chainTxHash: TX })),
    entries(formed.snapshots, 'Anchored', anchoredAt, 'root committed in batch 1'),
  );
  await current.putBatch({ ...formed.batch, status: 'Anchored', batchSeq: 1, txHash: TX, blockNumber: 7, anchoredAtMs: anchoredAt, attempts: 1 });
  // ...and the stale leader, later on every clock, gives it up.
  await new Promise((r) => setTimeout(r, 5));
  const lateAt = Date.now() + 60_000;
  await stale.putSnapshots(
    formed.snapshots.map((s) => ({ ...s, status: 'Failed' })),
    entries(formed.snapshots, 'Failed', lateAt, 'gave up after 6 attempts: timeout'),
  );
  await stale.putBatch({ ...formed.batch, status: 'Failed', attempts: 6, lastError: 'timeout' });

  const check = async (when: string): Promise<void> => {
    const batch = await store.getBatch(formed.batch.batchId);
    t.equal(batch?.status, 'Anchored', `${when}: the batch row is the successor's`);
    t.equal(batch?.batchSeq, 1);
    t.equal(batch?.txHash, TX);
    t.same((await store.batchesByStatus('Failed', 10)).map((b) => b.batchId), [], `${when}: not listed Failed`);
    t.same((await store.anchoredBelow(null, 10)).map((b) => [b.batchId, b.batchSeq]), [[formed.batch.batchId, 1]]);
    t.equal(await store.anchoredCountThrough(1), 1);
    const evidence = await new ClickHouseEvidenceStore(index.database).findBatch(formed.batch.batchId);
    t.equal(evidence?.status, 'Anchored', `${when}: the verifier's read takes the newest epoch too`);
    for (const s of formed.snapshots) {
      t.equal((await store.getSnapshot(s.tenantId, s.snapshotId))?.status, 'Anchored', `${when}: the snapshot row is the successor's`);
      const life = await store.lifecycleOf(s.tenantId, s.snapshotId);
      t.equal(life.at(-1)?.state, 'Anchored', `${when}: the lifecycle ends Anchored`);
      t.notOk(
        life.some((e) => e.state === 'Failed'),
        `${when}: the stale leader's entry is left out`,
      );
    }
  };
  await check('before merges');
  for (const table of ['batches', 'snapshots']) await raw.exec(`OPTIMIZE TABLE dris.${table} FINAL`);
  t.equal(Number((await raw.query<{ c: number | string }>(`SELECT count() AS c FROM dris.batches WHERE batch_id = {id:String}`, { id: formed.batch.batchId }))[0]?.c), 1, 'merged into one row');
  await check('after merges');

  // A row of an older version of dris (a microsecond version, epoch 0) loses too.
  const legacy = (await raw.query<Record<string, unknown>>(`SELECT * EXCEPT version FROM dris.batches FINAL WHERE batch_id = {id:String}`, { id: formed.batch.batchId }))[0];
  await raw.insertJsonEachRow('dris.batches', [{ ...legacy, status: 'Pending', version: Date.now() * 1000 }]);
  t.equal((await store.getBatch(formed.batch.batchId))?.status, 'Anchored', 'an epoch-0 row does not replace a fenced one');

  // A write not fenced (a retry through the API) takes the highest epoch and wins by time.
  t.equal(await store.highestEpoch(), 6);
  await store.putBatch({ ...formed.batch, status: 'Anchored', batchSeq: 1, txHash: TX, blockNumber: 7, anchoredAtMs: anchoredAt, attempts: 1, lastError: 'noted' });
  t.equal((await store.getBatch(formed.batch.batchId))?.lastError, 'noted', 'the unfenced write replaces the newest row');
});

void t.test('a term whose epoch is below the store\'s writes above it once a lease confirms it', async (t) => {
  const store = new ClickHousePipelineStore(index.database);
  const held = new AbortController();
  const term: Leadership = { epoch: 2, lost: held.signal };
  const fenced = await fenceTerm(store, term, 50);
  t.equal(fenced.epoch, 7, 'the epoch after the stored 6');
  await fenced.store.putBatch({ ...formed.batch, status: 'Anchored', batchSeq: 1, txHash: TX, blockNumber: 7, anchoredAtMs: BASE_MS, attempts: 1, lastError: 'epoch 7' });
  t.equal((await store.getBatch(formed.batch.batchId))?.lastError, 'epoch 7');
  t.equal(await store.highestEpoch(), 7);

  const lost = new AbortController();
  const refused = fenceTerm(store, { epoch: 3, lost: lost.signal }, 10_000);
  setTimeout(() => lost.abort(), 20);
  const err = await refused.then(
    () => null,
    (e: unknown) => e,
  );
  t.equal(err instanceof DrisError ? err.code : null, 'invalid_state', 'a term lost while it waits is refused');
  const equal = await fenceTerm(store, { epoch: 7, lost: held.signal }, 10_000);
  t.equal(equal.epoch, 7, 'an epoch equal to the stored one is taken at once (the embedded elector restarts at 1)');
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ClickHouseDatabase } from '../../src/adapters/clickhouse/database.js';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { SnapshotListing } from '../../src/adapters/clickhouse/snapshot-listing.js';
import { ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import { TimedSqlRunner } from '../../src/adapters/clickhouse/timed-runner.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { formBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { ListedSnapshot } from '../../src/domain/pipeline/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { sampleRecord } from '../harness/records.js';

/**
 * A batch write cut short (a crash after the snapshots, before the batch row that commits them)
 * leaves snapshots of a batch that was never stored. When its records are formed again into a
 * batch of other content, nothing replaces them: the store never shows them.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-uncommitted-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const { backend: hashing } = await loadHashingBackend('js');
const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: join(root, 'clickhouse') } });
await index.database.migrate();
t.teardown(() => index.close());

const BASE_MS = Date.parse('2025-07-01T00:00:00.000Z');
const recordsOf = (prefix: string, count: number): ReturnType<typeof sampleRecord>[] =>
  Array.from({ length: count }, (_, i) => ({
    ...sampleRecord(i),
    tenantId: 'acme',
    recordId: `${prefix}-${i}`,
    ingestId: `01JUNCOMMIT${prefix}00000000000${i}`,
    recordHash: hashing.sha256Hex(Buffer.from(`${prefix}-${i}`)),
    acceptedAt: new Date(BASE_MS + i).toISOString(),
  }));

// The interrupted write: a timed batch of two records, formed first, whose batch row never came.
const cut = formBatch(recordsOf('A', 2), hashing, BASE_MS + 10);
// Its records formed again, with a third, into a batch of other content, stored whole.
const stored = formBatch([...recordsOf('A', 2), ...recordsOf('B', 1)], hashing, BASE_MS + 20);

async function listAll(store: ClickHousePipelineStore, limit: number): Promise<ListedSnapshot[]> {
  const out: ListedSnapshot[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const page = await store.listSnapshots({ tenantId: 'acme', limit, ...(cursor === undefined ? {} : { cursor }) });
    out.push(...page.items);
    if (page.nextCursor === null) return out;
    cursor = page.nextCursor;
  }
  throw new Error('the listing did not end');
}

void t.test('snapshots of a batch never stored are neither listed nor found', async (t) => {
  const store = new ClickHousePipelineStore(index.database);
  await store.putSnapshots(cut.snapshots, cut.lifecycle);
  await store.saveFormedBatches([stored]);
  const cutId = cut.snapshots[0]?.snapshotId ?? '';
  const storedId = stored.snapshots[0]?.snapshotId ?? '';
  t.not(cutId, storedId, 'the batches differ, and so do their snapshots');

  t.equal(await store.getSnapshot('acme', cutId), null, 'the uncommitted snapshot is not found');
  t.equal((await store.getSnapshot('acme', storedId))?.batchId, stored.batch.batchId, 'the stored one is');
  t.same(
    (await listAll(store, 100)).map((s) => s.snapshotId),
    [storedId],
    'one page: only the stored snapshot',
  );
  t.same(
    (await listAll(store, 1)).map((s) => s.snapshotId),
    [storedId],
    'pages of one: the cursor passes the uncommitted snapshot, whose page comes out empty',
  );
  t.same(
    (await store.listSnapshots({ tenantId: 'acme', limit: 100, status: 'Batched', recordId: 'A-0' })).items.map((s) => s.snapshotId),
    [storedId],
    'filtered by a record of both: only the stored snapshot',
  );
});

void t.test('anchored snapshots are listed without looking up their batch rows; others are checked', async (t) => {
  const read: string[] = [];
  const counted = new ClickHouseDatabase(new TimedSqlRunner(index.database.runner, (name) => read.push(name)));
  const store = new ClickHousePipelineStore(counted);
  const formed = formBatch(recordsOf('C', 3), hashing, BASE_MS + 30);
  await store.saveFormedBatches([formed]);
  const batched = (await store.listSnapshots({ tenantId: 'acme', limit: 100, status: 'Batched', recordId: 'C-0' })).items;
  t.same(batched.map((s) => s.snapshotId), formed.snapshots.map((s) => s.snapshotId), 'the batched snapshot is listed');
  t.ok(read.includes('batches'), 'after a look at its batch row');

  await store.putSnapshots(
    formed.snapshots.map((s) => ({ ...s, status: 'Anchored' as const, onChainConfirmed: true })),
    [],
  );
  read.length = 0;
  const anchored = (await store.listSnapshots({ tenantId: 'acme', limit: 100, status: 'Anchored', recordId: 'C-0' })).items;
  t.same(anchored.map((s) => s.snapshotId), formed.snapshots.map((s) => s.snapshotId), 'the anchored snapshot is listed');
  t.same(read, ['snapshots', 'snapshots'], 'from the snapshots alone: the page, then its rows whole');
  t.same(anchored[0]?.recordIds, formed.snapshots[0]?.recordIds, 'with its record ids');
  t.notOk(anchored[0] !== undefined && 'ingestIds' in anchored[0], 'and without its ingest ids, which a listing does not show');
  read.length = 0;
  const again = (await store.listSnapshots({ tenantId: 'acme', limit: 100, status: 'Anchored', recordId: 'C-0' })).items;
  t.same(again, anchored, 'listed again, the same');
  t.same(read, ['snapshots'], 'with the page read alone: the row versions are those already read whole');
  read.length = 0;
  t.equal((await store.getSnapshot('acme', formed.snapshots[0]?.snapshotId ?? ''))?.status, 'Anchored', 'and found by id');
  t.same(read, ['snapshots'], 'with one query too');

  // A newer version of the row is read whole again, never taken for the one read before.
  await new Promise((r) => setTimeout(r, 2));
  await store.putSnapshots(
    formed.snapshots.map((s) => ({ ...s, status: 'Anchored' as const, onChainConfirmed: false, chainTxHash: `0x${'ab'.repeat(32)}` })),
    [],
  );
  read.length = 0;
  const rewritten = (await store.listSnapshots({ tenantId: 'acme', limit: 100, status: 'Anchored', recordId: 'C-0' })).items;
  t.same(rewritten.map((s) => [s.snapshotId, s.onChainConfirmed, s.chainTxHash]), formed.snapshots.map((s) => [s.snapshotId, false, `0x${'ab'.repeat(32)}`]), 'a rewritten row lists as rewritten');
  t.same(read, ['snapshots', 'snapshots'], 'read whole again');
  t.same((await store.listSnapshots({ tenantId: 'other', limit: 100 })).items, [], "another tenant's listing shows none of them");
});

void t.test('the row versions kept whole are bounded: the least recently listed go first', async (t) => {
  const read: string[] = [];
  const runner = new TimedSqlRunner(index.database.runner, (name) => read.push(name));
  const listing = new SnapshotListing(runner, 'dris', (rows) => Promise.resolve(new Set(rows.map((r) => r.batch_id))), 2);
  const formed = formBatch([...recordsOf('E', 2), ...recordsOf('F', 2).map((r) => ({ ...r, tenantId: 'acme-2' })), ...recordsOf('G', 2).map((r) => ({ ...r, tenantId: 'acme-3' }))], hashing, BASE_MS + 50);
  await new ClickHousePipelineStore(index.database).saveFormedBatches([formed]);
  const list = async (tenantId: string): Promise<number> => {
    read.length = 0;
    const { items } = await listing.list({ tenantId, limit: 10, recordId: `${tenantId === 'acme' ? 'E' : tenantId === 'acme-2' ? 'F' : 'G'}-0` });
    t.equal(items.length, 1, `${tenantId}: its snapshot`);
    return read.length;
  };
  t.equal(await list('acme'), 2, 'first read whole');
  t.equal(await list('acme-2'), 2, 'first read whole');
  t.equal(await list('acme'), 1, 'kept');
  t.equal(await list('acme-3'), 2, 'first read whole, and acme-2 leaves');
  t.equal(await list('acme'), 1, 'still kept');
  t.equal(await list('acme-2'), 2, 'read whole again');
});

void t.test('a record batched here is found by hash with its proof, which record_leaves does not hold', async (t) => {
  const store = new ClickHousePipelineStore(index.database);
  const records = recordsOf('D', 3);
  await index.records.insertRecords(records);
  const formed = formBatch(records, hashing, BASE_MS + 40);
  await store.saveFormedBatches([formed]);
  const leaf = await index.database.runner.query<{ merkle_proof: string[] }>('SELECT merkle_proof FROM dris.record_leaves FINAL WHERE tenant_id = {t:String} AND ingest_id = {i:String}', { t: 'acme', i: records[1]?.ingestId ?? '' });
  t.same(leaf, [{ merkle_proof: [] }], 'record_leaves holds the place, not the proof');
  const assigned = formed.assignments.find((a) => a.ingestId === records[1]?.ingestId);
  const found = await new ClickHouseEvidenceStore(index.database).findByHash('acme', 'recordHash', records[1]?.recordHash ?? '', 10);
  t.same(
    found.map((r) => [r.ingestId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]),
    [[records[1]?.ingestId, formed.batch.batchId, assigned?.leafIndex, 3, assigned?.proof]],
  );
  t.equal(assigned?.proof.length, 2, 'a tree of three leaves: two hashes');
});

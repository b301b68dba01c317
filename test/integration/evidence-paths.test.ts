import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { BatchTops, STORED_PROOF_LEVELS } from '../../src/adapters/clickhouse/batch-tops.js';
import { ChdbSqlRunner } from '../../src/adapters/clickhouse/chdb-runner.js';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { LOOKUP_LINES_SETTINGS, lookupLinesOf, lookupRowsOf } from '../../src/adapters/clickhouse/evidence-rows.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { Batch } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { BASE_MS, record } from './index-fixtures.js';

/**
 * A batched record's audit path on the embedded engine: its record_evidence_packed row keeps the lower
 * levels, and every reader (verification's look-ups by key and by hash, the trace) answers the
 * whole path, derived from the batch's block roots. Rows written whole by earlier versions read as
 * they are; a row of a batch write cut short before its block roots reads as in no batch.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-evidence-paths-'));
const path = join(root, 'clickhouse');
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const hashing = new JsHashingBackend();
/** A record of one tenant's invoices (the shared fixture's hashes: hex of the right lengths). */
const invoice = (tenantId: string): AcceptedRecord => record(tenantId, { database: 'erp', collection: 'invoices' });

const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path } });
await index.database.migrate();
const raw = new ChdbSqlRunner(path, 30_000);
t.teardown(async () => {
  await raw.close();
  await index.close();
});

/** The path hashes each record's row holds, by ingest id. */
async function storedPaths(tenantId: string): Promise<Map<string, number>> {
  const rows = await raw.query<{ ingest_id: string; n: number | string }>(
    `SELECT ingest_id, length(JSONExtract(row, 9, 12, 'Array(String)')) AS n FROM dris.record_evidence_packed WHERE tenant_id = '${tenantId}' AND JSONExtract(row, 9, 9, 'Nullable(String)') IS NOT NULL`,
  );
  return new Map(rows.map((r) => [r.ingest_id, Number(r.n)]));
}

function proofOf(formed: FormedBatch, r: AcceptedRecord): readonly string[] | undefined {
  return formed.assignments.find((a) => a.ingestId === r.ingestId)?.proof;
}

void t.test('a batch of 300: rows keep at most the lower levels; look-ups, by hash and the trace answer the whole path', async (t) => {
  const records = Array.from({ length: 300 }, () => invoice('t-paths'));
  await index.records.insertRecords(records);
  const formed = formBatch(records, hashing, BASE_MS + 60_000);
  await index.pipeline.saveFormedBatches([formed]);

  const stored = await storedPaths('t-paths');
  t.equal(stored.size, 300);
  t.ok([...stored.values()].every((n) => n <= STORED_PROOF_LEVELS), 'no row holds more than the lower levels');
  const blocks = await raw.query<{ n: number | string; roots: number | string }>(`SELECT count() AS n, any(length(block_roots)) AS roots FROM dris.batch_blocks WHERE batch_id = '${formed.batch.batchId}'`);
  t.same(blocks.map((b) => [Number(b.n), Number(b.roots)]), [[1, 19 * 64]], 'and the batch has one row of its 19 block roots');

  const evidence = new ClickHouseEvidenceStore(index.database);
  const found = await Promise.all(records.map((r) => evidence.findRecord({ tenantId: 't-paths', collection: 'invoices', recordId: r.recordId })));
  let whole = 0;
  let verified = 0;
  const root = Buffer.from(formed.batch.merkleRoot, 'hex');
  found.forEach((f, i) => {
    const r = records[i] as AcceptedRecord;
    const s = f[0];
    if (s !== undefined && s.merkleProof.join() === proofOf(formed, r)?.join() && s.merkleProof.length > STORED_PROOF_LEVELS) whole++;
    if (s !== undefined && s.leafIndex !== null && hashing.verifyInclusion(hashing.leafHash(Buffer.from(r.recordHash, 'hex')), s.leafIndex, 300, s.merkleProof.map((h) => Buffer.from(h, 'hex')), root)) verified++;
  });
  t.equal(whole, 300, 'every look-up answers the whole path');
  t.equal(verified, 300, 'and it verifies against the batch root');

  const one = records[123] as AcceptedRecord;
  const byHash = await index.evidence.findByHash('t-paths', 'recordHash', one.recordHash, 10);
  t.same(byHash.map((r) => r.merkleProof), [proofOf(formed, one)], 'a look-up by hash answers it too');
  const trace = await index.pipeline.traceRecord('t-paths', { collection: 'invoices', recordId: one.recordId });
  t.same(trace.map((x) => x.merkleProof), [proofOf(formed, one)], 'and the trace');
});

void t.test('a row written whole (an earlier version) reads as it is', async (t) => {
  const records = Array.from({ length: 40 }, () => invoice('t-whole'));
  const formed = formBatch(records, hashing, BASE_MS + 70_000);
  await index.pipeline.saveFormedBatches([formed]);
  // Rewritten as earlier versions wrote it: the whole path in the row, at a higher version, into
  // the table they wrote (views copy it on, through record_evidence_by_hash, to record_evidence_packed).
  const target = records[7] as AcceptedRecord;
  const [{ row, ...key }] = lookupRowsOf([target], formed.assignments, Number(BigInt(Date.now()) * 1000n), false) as [{ row: unknown[] }];
  const evidence = row.at(-1) as unknown[];
  const proof = proofOf(formed, target) ?? [];
  await raw.insertJsonEachRow('dris.record_evidence', [{ ...key, evidence: JSON.stringify([...evidence.slice(0, -1), proof]) }]);
  const fresh = new ClickHouseEvidenceStore(index.database);
  const found = await fresh.findRecord({ tenantId: 't-whole', collection: 'invoices', recordId: target.recordId });
  t.same(found.at(-1)?.merkleProof, proof);
  t.equal(found.at(-1)?.merkleProof.length, 6, 'a 40-leaf tree: six hashes, all from the row');
});

void t.test('a batch write cut short after its evidence rows: its records read as in no batch; formed again and stored, with their whole path', async (t) => {
  const records = Array.from({ length: 50 }, () => invoice('t-cut'));
  await index.records.insertRecords(records);
  const formed = formBatch(records, hashing, BASE_MS + 80_000);
  // The write cut short: the evidence rows, as the batch write makes them, without the block roots and the batch row.
  await raw.insertJsonLines('dris.record_evidence_packed', lookupLinesOf(records, formed.assignments, Number(BigInt(Date.now()) * 1000n)), LOOKUP_LINES_SETTINGS);
  const tops = new BatchTops(index.database);
  const evidence = new ClickHouseEvidenceStore(index.database, { tops });
  const target = records[31] as AcceptedRecord;
  const before = await evidence.findRecord({ tenantId: 't-cut', collection: 'invoices', recordId: target.recordId });
  t.same(
    before.map((r) => [r.batchId, r.leafIndex, r.treeSize, r.merkleProof.length]),
    [[null, null, null, 0]],
    'in no batch',
  );
  t.equal(tops.bytes, 0, 'nothing kept of a batch not found');
  // The accumulator forms the same records into the same batch again, and stores it whole.
  await index.pipeline.saveFormedBatches([formBatch(records, hashing, BASE_MS + 80_000)]);
  const after = await evidence.findRecord({ tenantId: 't-cut', collection: 'invoices', recordId: target.recordId });
  t.same(after[0]?.merkleProof, proofOf(formed, target));
  t.ok(tops.bytes > 0, 'the upper levels are kept once read');
});

void t.test('a cache smaller than one batch keeps nothing and still completes every path', async (t) => {
  const records = Array.from({ length: 100 }, () => invoice('t-small'));
  const formed = formBatch(records, hashing, BASE_MS + 90_000);
  await index.pipeline.saveFormedBatches([formed]);
  const tops = new BatchTops(index.database, { maxBytes: 64 });
  const evidence = new ClickHouseEvidenceStore(index.database, { tops });
  const found = await Promise.all(records.slice(0, 20).map((r) => evidence.findRecord({ tenantId: 't-small', collection: 'invoices', recordId: r.recordId })));
  t.same(
    found.map((f) => f[0]?.merkleProof),
    records.slice(0, 20).map((r) => proofOf(formed, r)),
  );
  t.equal(tops.bytes, 0);
});

void t.test('the warm-up reads: the anchored batches of highest sequence by their newest row; their tree tops in one read', async (t) => {
  const batches = [0, 1, 2, 3].map(() => Array.from({ length: 40 }, () => invoice('t-warm')));
  await index.records.insertRecords(batches.flat());
  const formed = batches.map((records, k) => formBatch(records, hashing, BASE_MS + 100_000 + k));
  await index.pipeline.saveFormedBatches(formed);
  const [a, b, c, d] = formed.map((f) => f.batch) as [Batch, Batch, Batch, Batch];
  const anchor = (batch: Batch, batchSeq: number): Promise<void> =>
    index.pipeline.putBatch({ ...batch, status: 'Anchored', batchSeq, txHash: `0x${'ab'.repeat(32)}`, blockNumber: batchSeq, anchoredAtMs: BASE_MS, attempts: 1 });
  await anchor(a, 101);
  await anchor(b, 103);
  await anchor(c, 102);
  // Anchored, then sent back to be anchored again: its newest row is not Anchored.
  await anchor(d, 104);
  await index.pipeline.putBatch({ ...d, status: 'Pending', attempts: 0 });

  const tops = new BatchTops(index.database);
  const evidence = new ClickHouseEvidenceStore(index.database, { tops });
  const ours = (await evidence.anchoredBatches(100)).filter((w) => formed.some((f) => f.batch.batchId === w.batchId));
  t.same(
    ours.map((w) => [w.batchId, w.batchSeq, w.status]),
    [
      [b.batchId, 103, 'Anchored'],
      [c.batchId, 102, 'Anchored'],
      [a.batchId, 101, 'Anchored'],
    ],
  );
  t.match(ours[0], { merkleRoot: b.merkleRoot, blockNumber: 103, treeSize: 40 });
  t.same((await evidence.anchoredBatches(1)).map((w) => w.batchSeq), [103]);
  t.same(await evidence.anchoredBatches(0), []);

  t.equal(tops.bytes, 0);
  await evidence.warmBatches(ours.map((w) => w.batchId));
  const held = tops.bytes;
  t.ok(held > 0, 'the tops of the warmed batches are held');
  const target = formed[1]?.records[17];
  if (target === undefined || formed[1] === undefined) throw new Error('fixture');
  const found = await evidence.findRecord({ tenantId: 't-warm', collection: 'invoices', recordId: target.recordId });
  t.same(found[0]?.merkleProof, proofOf(formed[1], target), 'a path completed from the warmed tops');
  t.equal(tops.bytes, held, 'nothing more read');
});

void t.test("the records' look-up table read ahead: its parts' files, within the budget", async (t) => {
  await index.records.insertRecords(Array.from({ length: 50 }, () => invoice('t-prefetch')));
  const evidence = new ClickHouseEvidenceStore(index.database);
  const all = await evidence.prefetchRecords(1024 * 1024 * 1024);
  t.ok(all.tableBytes > 0, 'the table holds bytes');
  // A part's small files besides those bytes_on_disk counts are read too; a part merged away
  // meanwhile is skipped (its rows are in the part that replaced it).
  t.ok(all.bytes > 0 && all.bytes < all.tableBytes + 64 * 1024, `the table asked for (${all.bytes} of ${all.tableBytes})`);
  t.equal((await evidence.prefetchRecords(1000)).bytes, 1000, 'no byte past the budget');
  t.equal((await evidence.prefetchRecords(0)).bytes, 0);
  const stop = new AbortController();
  stop.abort();
  t.equal((await evidence.prefetchRecords(1024 * 1024, stop.signal)).bytes, 0, 'a stopped read-ahead asks for nothing');
});

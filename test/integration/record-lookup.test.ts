import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { ChdbSqlRunner } from '../../src/adapters/clickhouse/chdb-runner.js';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { bootstrapSql, migrations, recordMigrationSql } from '../../src/adapters/clickhouse/migrations/index.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import { toRecordRow } from '../../src/adapters/clickhouse/record-rows.js';
import { LOOKUP_LINES_SETTINGS, lookupRowsOf } from '../../src/adapters/clickhouse/evidence-rows.js';
import { evidenceKeyHash } from '../../src/adapters/clickhouse/evidence-key.js';
import { dateTime64Text } from '../../src/adapters/clickhouse/values.js';
import { formBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { LeafAssignment } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import type { StoredRecord } from '../../src/domain/verification/ports.js';
import { setLogLevel } from '../../src/util/logger.js';

/**
 * record_evidence_packed (which superseded record_evidence_by_hash, record_evidence and
 * record_lookup in turn): every record by (tenant, collection, recordId) with its leaf in one row,
 * written by the indexer (through the materialized view on records) and again, with the leaf, by
 * the pipeline; and the back-fills when an older data directory is upgraded.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-record-lookup-'));
const path = join(root, 'clickhouse');
t.teardown(() => {
  rmSync(root, { recursive: true, force: true });
});

const hashing = new JsHashingBackend();
const BASE_MS = Date.parse('2025-06-01T08:00:00.000Z');

let seq = 0;
function record(tenantId: string, over: Partial<AcceptedRecord> = {}): AcceptedRecord {
  seq += 1;
  const payload = JSON.stringify({ n: seq });
  return {
    hashScheme: 'dris-v1',
    tenantId,
    database: 'erp',
    collection: 'invoices',
    recordId: `inv-${seq}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: hashing.sha256Hex(Buffer.from(payload)),
    salt: String(seq).padStart(32, '0'),
    ingestId: `0000${String(BASE_MS + seq).padStart(14, '0')}${String(seq).padStart(8, '0')}`,
    clientId: 'app',
    keyId: 'key',
    recordHash: hashing.sha256Hex(Buffer.from(`record ${seq}`)),
    acceptedAt: new Date(BASE_MS + seq).toISOString(),
    payload,
    idempotencyKey: null,
    correlationId: `corr-${seq}`,
    ...over,
  };
}

/** What a look-up answers about a record's place in its batch. */
function leafOf(found: readonly StoredRecord[]): [string | null, string | null, number | null, number | null, number][] {
  return found.map((r) => [r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof.length]);
}

/** Database `db` as a version that had migrations up to `version` left it, bookkeeping included. */
async function schemaUpTo(db: string, version: number): Promise<void> {
  for (const s of bootstrapSql(db)) await raw.exec(s);
  for (const m of migrations(db).filter((m) => m.version <= version)) {
    await raw.exec(m.sql);
    await raw.exec(recordMigrationSql(db), { version: m.version, name: m.name });
  }
}

/**
 * The lines an older version's pipeline wrote to record_evidence and record_evidence_by_hash: the
 * key's columns, and the evidence as a member of its own.
 */
function legacyLines(records: readonly AcceptedRecord[], assignments: readonly LeafAssignment[], version: number): Buffer {
  const lines = lookupRowsOf(records, assignments, version, false).map((r) => {
    const { row, ...key } = r as { row: unknown[] };
    return `${JSON.stringify({ ...key, evidence: row.at(-1) })}\n`;
  });
  return Buffer.from(lines.join(''), 'utf8');
}

/** A packed row as read: EVIDENCE_ROW_HEAD, then the evidence. */
function packed(text: string): { head: unknown[]; evidence: unknown[] } {
  const row = JSON.parse(text) as unknown[];
  return { head: row.slice(0, -1), evidence: row.at(-1) as unknown[] };
}

const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path } });
const raw = new ChdbSqlRunner(path, 30_000);
t.teardown(async () => {
  await raw.close();
  await index.close();
});

void t.test('record_evidence_packed: hash key, small granules, compact parts, the row packed whole; fed by a view on records', async (t) => {
  await index.database.migrate();
  const [table] = await raw.query<{ engine: string; sorting_key: string; primary_key: string; create_table_query: string }>(
    `SELECT engine, sorting_key, primary_key, create_table_query FROM system.tables WHERE database = 'dris' AND name = 'record_evidence_packed'`,
  );
  t.equal(table?.engine, 'ReplacingMergeTree');
  t.equal(table?.sorting_key, 'key_hash, tenant_id, collection, record_id, database, record_version, ingest_id');
  t.equal(table?.primary_key, 'key_hash');
  t.match(table?.create_table_query, /index_granularity = 16/);
  t.match(table?.create_table_query, /merge_selector_base = 5\b/);
  const views = await raw.query<{ name: string; engine: string }>(
    `SELECT name, engine FROM system.tables WHERE database = 'dris' AND engine = 'MaterializedView' ORDER BY name`,
  );
  t.same(
    views.map((v) => [v.name, v.engine]),
    [
      ['record_evidence_by_hash_from_evidence', 'MaterializedView'],
      ['record_evidence_from_lookup', 'MaterializedView'],
      ['record_evidence_packed_from_by_hash', 'MaterializedView'],
      ['record_evidence_packed_from_records', 'MaterializedView'],
    ],
    'none of record_lookup, record_evidence and record_evidence_by_hash is fed from records any more',
  );

  const recs = [record('t-a'), record('t-a', { sourceTimestamp: '2025-05-31T23:59:59+02:00', operationType: 'delete' })];
  await index.records.insertRecords(recs);
  const parts = await raw.query<{ part_type: string }>(`SELECT DISTINCT part_type FROM system.parts WHERE database = 'dris' AND table = 'record_evidence_packed' AND active`);
  t.same(parts.map((p) => p.part_type), ['Compact']);
  const rows = await raw.query<{ record_id: string; version: number | string; row: string }>(
    `SELECT record_id, version, row FROM dris.record_evidence_packed WHERE tenant_id = 't-a' ORDER BY record_id`,
  );
  t.same(
    rows.map((r) => [r.record_id, Number(r.version), packed(r.row)]),
    recs.map((r) => [
      r.recordId,
      1,
      {
        head: [r.tenantId, r.collection, r.recordId, r.database, r.recordVersion, r.ingestId, Date.parse(r.acceptedAt), 1],
        evidence: [r.clientId, r.operationType, r.sourceTimestamp, r.hashScheme, r.payloadHash, r.recordHash, r.salt, null, null, null, null, []],
      },
    ]),
    'each indexed record has its row, version 1, its head and evidence in order, no leaf yet',
  );
  const none = await raw.query(
    `SELECT 1 FROM dris.record_lookup WHERE tenant_id = 't-a' UNION ALL SELECT 1 FROM dris.record_evidence WHERE tenant_id = 't-a'
     UNION ALL SELECT 1 FROM dris.record_evidence_by_hash WHERE tenant_id = 't-a'`,
  );
  t.same(none, [], 'nothing written to record_lookup, record_evidence or record_evidence_by_hash');
});

void t.test('a row an older process writes to record_lookup reaches record_evidence', async (t) => {
  const r = record('t-old');
  const evidence = new ClickHouseEvidenceStore(index.database);
  await index.records.insertRecords([r]);
  const formed = formBatch([r], hashing, BASE_MS + 5_000);
  const leaf = formed.assignments[0];
  // The row as the previous version's pipeline wrote it: every field a column of record_lookup.
  await raw.insertJsonEachRow('dris.record_lookup', [
    {
      tenant_id: r.tenantId,
      collection: r.collection,
      record_id: r.recordId,
      database: r.database,
      record_version: r.recordVersion,
      ingest_id: r.ingestId,
      accepted_at: dateTime64Text(Date.parse(r.acceptedAt)),
      client_id: r.clientId,
      operation_type: r.operationType,
      source_timestamp: r.sourceTimestamp,
      hash_scheme: r.hashScheme,
      payload_hash: r.payloadHash,
      record_hash: r.recordHash,
      salt: r.salt,
      snapshot_id: leaf?.snapshotId,
      batch_id: leaf?.batchId,
      leaf_index: leaf?.leafIndex,
      tree_size: leaf?.treeSize,
      merkle_proof: leaf?.proof,
      version: 2,
    },
  ]);
  const found = await evidence.findRecord({ tenantId: 't-old', collection: 'invoices', recordId: r.recordId });
  t.same(leafOf(found), [[leaf?.snapshotId, formed.batch.batchId, 0, 1, 0]]);
  t.equal(found[0]?.recordHash, r.recordHash);
});

void t.test('a data directory of the version before record_evidence_by_hash: the upgrade back-fills it, and an older pipeline still reaches it', async (t) => {
  const db = 'dris_v24';
  await schemaUpTo(db, 24);
  const [batched, indexedOnly, batchedAfter] = [record('t-v'), record('t-v'), record('t-v')];
  // What that version wrote: record rows (its view copying them into record_evidence) and the
  // pipeline's rows with their leaves, into record_evidence.
  await raw.insertJsonEachRow(`${db}.records`, [batched, indexedOnly, batchedAfter].map((r) => toRecordRow(r)));
  const formed = formBatch([batched], hashing, BASE_MS + 1_000);
  await raw.insertJsonLines(`${db}.record_evidence`, legacyLines([batched], formed.assignments, 1_000), LOOKUP_LINES_SETTINGS);

  const { storage: upgraded } = await openClickHouseStorage({ engine: { kind: 'embedded', path }, database: db });
  t.teardown(() => upgraded.close());
  await upgraded.database.migrate();
  const evidence = new ClickHouseEvidenceStore(upgraded.database);
  const find = (r: AcceptedRecord): Promise<StoredRecord[]> => evidence.findRecord({ tenantId: 't-v', collection: 'invoices', recordId: r.recordId });
  t.same(leafOf(await find(batched)), [[formed.assignments[0]?.snapshotId, formed.batch.batchId, 0, 1, 0]], 'back-filled with its leaf');
  t.same(leafOf(await find(indexedOnly)), [[null, null, null, null, 0]], 'back-filled, not batched yet');

  // A process of the older version, still running during the upgrade, writes a leaf to record_evidence.
  const later = formBatch([batchedAfter], hashing, BASE_MS + 2_000);
  await raw.insertJsonLines(`${db}.record_evidence`, legacyLines([batchedAfter], later.assignments, 2_000), LOOKUP_LINES_SETTINGS);
  t.same(leafOf(await find(batchedAfter)), [[later.assignments[0]?.snapshotId, later.batch.batchId, 0, 1, 0]], 'its write reaches the new table');
  // And a record indexed now reaches the new table only.
  const fresh = record('t-v');
  await upgraded.records.insertRecords([fresh]);
  t.equal((await find(fresh)).length, 1);
  const old = await raw.query(`SELECT 1 FROM ${db}.record_evidence WHERE tenant_id = 't-v' AND record_id = {id:String}`, { id: fresh.recordId });
  t.same(old, [], 'record_evidence is no longer fed from records');
});

void t.test('a data directory of the version before record_evidence_packed: the upgrade back-fills it, and an older pipeline still reaches it', async (t) => {
  const db = 'dris_v29';
  await schemaUpTo(db, 29);
  const [batched, indexedOnly, batchedAfter] = [record('t-w'), record('t-w', { sourceTimestamp: '2025-05-31T23:59:59+02:00' }), record('t-w')];
  // What that version wrote: record rows (its view copying them into record_evidence_by_hash) and
  // the pipeline's rows with their leaves, into record_evidence_by_hash.
  await raw.insertJsonEachRow(`${db}.records`, [batched, indexedOnly, batchedAfter].map((r) => toRecordRow(r)));
  const formed = formBatch([batched], hashing, BASE_MS + 1_000);
  await raw.insertJsonLines(`${db}.record_evidence_by_hash`, legacyLines([batched], formed.assignments, 1_000), LOOKUP_LINES_SETTINGS);

  const { storage: upgraded } = await openClickHouseStorage({ engine: { kind: 'embedded', path }, database: db });
  t.teardown(() => upgraded.close());
  await upgraded.database.migrate();
  const evidence = new ClickHouseEvidenceStore(upgraded.database);
  const find = (r: AcceptedRecord): Promise<StoredRecord[]> => evidence.findRecord({ tenantId: 't-w', collection: 'invoices', recordId: r.recordId });
  t.same(leafOf(await find(batched)), [[formed.assignments[0]?.snapshotId, formed.batch.batchId, 0, 1, 0]], 'back-filled with its leaf');
  const [onlyIndexed] = await find(indexedOnly);
  t.same(leafOf(onlyIndexed === undefined ? [] : [onlyIndexed]), [[null, null, null, null, 0]], 'back-filled, not batched yet');
  t.match(onlyIndexed, { ingestId: indexedOnly.ingestId, recordHash: indexedOnly.recordHash, acceptedAtMs: Date.parse(indexedOnly.acceptedAt) });
  t.equal(onlyIndexed?.envelope.sourceTimestamp, '2025-05-31T23:59:59+02:00');

  // A process of the older version, still running during the upgrade, writes a leaf to record_evidence_by_hash.
  const later = formBatch([batchedAfter], hashing, BASE_MS + 2_000);
  await raw.insertJsonLines(`${db}.record_evidence_by_hash`, legacyLines([batchedAfter], later.assignments, 2_000), LOOKUP_LINES_SETTINGS);
  t.same(leafOf(await find(batchedAfter)), [[later.assignments[0]?.snapshotId, later.batch.batchId, 0, 1, 0]], 'its write reaches the new table');
  // And a record indexed now reaches the new table only.
  const fresh = record('t-w');
  await upgraded.records.insertRecords([fresh]);
  t.equal((await find(fresh)).length, 1);
  const old = await raw.query(`SELECT 1 FROM ${db}.record_evidence_by_hash WHERE tenant_id = 't-w' AND record_id = {id:String}`, { id: fresh.recordId });
  t.same(old, [], 'record_evidence_by_hash is no longer fed from records');
});

void t.test("a hash shared with another tenant's key (a collision) answers no row of that key", async (t) => {
  const mine = record('t-mine');
  const theirs = record('t-theirs', { recordId: 'their-secret' });
  await index.records.insertRecords([mine]);
  // Their row, stored under the hash of my key, as a collision would store it.
  const [row] = lookupRowsOf([theirs], [{ ingestId: theirs.ingestId, tenantId: theirs.tenantId, snapshotId: 's', batchId: 'b', leafIndex: 0, treeSize: 1, proof: [] }], 5);
  await raw.insertJsonEachRow('dris.record_evidence_packed', [{ ...row, key_hash: evidenceKeyHash({ tenantId: mine.tenantId, collection: mine.collection, recordId: mine.recordId }).toString() }]);
  const same = await raw.query<{ n: number | string }>(`SELECT count() AS n FROM dris.record_evidence_packed WHERE key_hash = {h:UInt64}`, {
    h: evidenceKeyHash({ tenantId: mine.tenantId, collection: mine.collection, recordId: mine.recordId }),
  });
  t.equal(Number(same[0]?.n), 2, 'both rows under one hash');
  const evidence = new ClickHouseEvidenceStore(index.database);
  const found = await evidence.findRecord({ tenantId: 't-mine', collection: 'invoices', recordId: mine.recordId });
  t.same(found.map((r) => [r.envelope.tenantId, r.ingestId]), [['t-mine', mine.ingestId]]);
  const trace = await new ClickHousePipelineStore(index.database).traceRecord('t-mine', { collection: 'invoices', recordId: mine.recordId });
  t.same(trace.map((x) => x.ingestId), [mine.ingestId]);
});

void t.test('the batch write adds the leaf whichever of indexer and pipeline writes first', async (t) => {
  // The versions are counted below: a background merge must not collapse them first.
  await raw.query('SYSTEM STOP MERGES dris.record_evidence_packed');
  t.teardown(() => raw.query('SYSTEM START MERGES dris.record_evidence_packed'));
  const store = new ClickHousePipelineStore(index.database);
  const evidence = new ClickHouseEvidenceStore(index.database);
  const indexedFirst = record('t-b');
  const batchedFirst = record('t-b');
  await index.records.insertRecords([indexedFirst]);
  const formed = formBatch([indexedFirst, batchedFirst], hashing, BASE_MS + 10_000);
  await store.saveFormedBatches([formed]);
  // The indexer, behind the accumulator, writes its row (version 1) after the leaf's.
  await index.records.insertRecords([batchedFirst]);

  for (const r of [indexedFirst, batchedFirst]) {
    const leaf = formed.assignments.find((a) => a.ingestId === r.ingestId);
    const found = await evidence.findRecord({ tenantId: 't-b', collection: 'invoices', recordId: r.recordId });
    t.same(leafOf(found), [[leaf?.snapshotId, formed.batch.batchId, leaf?.leafIndex, 2, 1]]);
    t.same(found[0]?.merkleProof, leaf?.proof);
    t.equal(found[0]?.recordHash, r.recordHash);
    t.equal(found[0]?.acceptedAtMs, Date.parse(r.acceptedAt));
    t.equal(found[0]?.clientId, 'app');
  }
  const stored = await raw.query<{ n: number | string }>(`SELECT count() AS n FROM dris.record_evidence_packed WHERE tenant_id = 't-b'`);
  t.equal(Number(stored[0]?.n), 4, 'both versions of both rows are stored until a merge');

  const trace = await store.traceRecord('t-b', { collection: 'invoices', recordId: batchedFirst.recordId });
  t.same(
    trace.map((x) => [x.ingestId, x.batchId, x.leafIndex]),
    [[batchedFirst.ingestId, formed.batch.batchId, formed.assignments.find((a) => a.ingestId === batchedFirst.ingestId)?.leafIndex]],
  );
  t.ok((trace[0]?.indexedAtMs ?? 0) > 0);
});

void t.test('versions, filters and many look-ups in one query', async (t) => {
  const evidence = new ClickHouseEvidenceStore(index.database);
  const v1 = record('t-c', { recordId: 'shared' });
  const v2 = record('t-c', { recordId: 'shared', recordVersion: '2' });
  const otherDb = record('t-c', { recordId: 'shared', database: 'crm' });
  const otherCollection = record('t-c', { recordId: 'shared', collection: 'orders' });
  const otherTenant = record('t-d', { recordId: 'shared' });
  const many = Array.from({ length: 40 }, () => record('t-c'));
  await index.records.insertRecords([v1, v2, otherDb, otherCollection, otherTenant, ...many]);

  const ids = (found: readonly StoredRecord[]): string[] => found.map((r) => r.ingestId);
  const before = evidence.lookupQueries;
  const [all, byVersion, byDb, orders, tenantD, none, ...each] = await Promise.all([
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'shared' }),
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'shared', recordVersion: '2' }),
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'shared', database: 'crm' }),
    evidence.findRecord({ tenantId: 't-c', collection: 'orders', recordId: 'shared' }),
    evidence.findRecord({ tenantId: 't-d', collection: 'invoices', recordId: 'shared' }),
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'missing' }),
    ...many.map((r) => evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: r.recordId })),
  ]);
  t.ok(evidence.lookupQueries - before <= 3, `look-ups coalesced into ${evidence.lookupQueries - before} queries`);
  t.same(ids(all ?? []), [v1, v2, otherDb].map((r) => r.ingestId), 'oldest acceptance first');
  t.same(ids(byVersion ?? []), [v2.ingestId]);
  t.same(ids(byDb ?? []), [otherDb.ingestId]);
  t.same(ids(orders ?? []), [otherCollection.ingestId]);
  t.same(ids(tenantD ?? []), [otherTenant.ingestId]);
  t.same(none, []);
  t.same(each.map(ids), many.map((r) => [r.ingestId]));

  // A batch of one tenant and one collection takes the other form of the query.
  const sameCollection = await Promise.all([
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'shared', database: 'crm' }),
    ...many.map((r) => evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: r.recordId })),
    evidence.findRecord({ tenantId: 't-c', collection: 'invoices', recordId: 'missing' }),
  ]);
  t.same(sameCollection.map(ids), [[otherDb.ingestId], ...many.map((r) => [r.ingestId]), []]);
});

void t.test('a data directory made before record_lookup: the upgrade back-fills record_lookup, then record_evidence', async (t) => {
  const db = 'dris_before';
  // The schema as the previous version left it: migrations up to 9, with their bookkeeping.
  await schemaUpTo(db, 9);
  const [leafStored, rewritten, unbatched, batchedNotIndexed, reformed] = [record('t-u'), record('t-u'), record('t-u'), record('t-u'), record('t-u')];
  // What the previous indexer wrote: record rows only.
  await raw.insertJsonEachRow(`${db}.records`, [leafStored, rewritten, unbatched, reformed].map((r) => toRecordRow(r)));
  const leafRow = (r: AcceptedRecord, batchId: string, leafIndex: number, version: number): object => ({
    tenant_id: r.tenantId,
    ingest_id: r.ingestId,
    snapshot_id: `s-${batchId}`,
    batch_id: batchId,
    leaf_index: leafIndex,
    tree_size: 4,
    merkle_proof: [hashing.sha256Hex(Buffer.from(`${batchId}/${leafIndex}`))],
    version,
  });
  // Leaves as the migration-9 pipeline stored them: one batch, one re-formed record (the later
  // leaf wins), and one record batched before its indexer got to it.
  await raw.insertJsonEachRow(`${db}.record_leaves`, [
    leafRow(leafStored, 'b-9', 0, 100),
    leafRow(batchedNotIndexed, 'b-9', 1, 100),
    leafRow(reformed, 'b-orphan', 3, 100),
    leafRow(reformed, 'b-9', 2, 200),
  ]);
  // A row rewritten with its leaf, as the pipeline did before record_leaves existed.
  await raw.insertJsonEachRow(`${db}.records`, [
    { ...toRecordRow(rewritten), snapshot_id: 's-b-8', batch_id: 'b-8', leaf_index: 5, tree_size: 6, merkle_proof: ['ab'.repeat(32), 'cd'.repeat(32)], status: 'Batched', row_version: 2 + BASE_MS * 1000 },
  ]);

  // A second index on the same engine, as the next version opens the directory.
  const { storage: upgraded } = await openClickHouseStorage({ engine: { kind: 'embedded', path }, database: db });
  t.teardown(() => upgraded.close());
  await upgraded.database.migrate();
  const versions = await raw.query<{ version: number | string }>(`SELECT version FROM ${db}.schema_migrations FINAL ORDER BY version`);
  t.same(versions.map((v) => Number(v.version)), migrations(db).map((m) => m.version));
  const evidence = new ClickHouseEvidenceStore(upgraded.database);
  const find = (r: AcceptedRecord): Promise<StoredRecord[]> => evidence.findRecord({ tenantId: 't-u', collection: 'invoices', recordId: r.recordId });
  t.same(leafOf(await find(leafStored)), [['s-b-9', 'b-9', 0, 4, 1]], 'leaf from record_leaves');
  t.same(leafOf(await find(rewritten)), [['s-b-8', 'b-8', 5, 6, 2]], "leaf from the record's own rewritten row");
  t.same(leafOf(await find(unbatched)), [[null, null, null, null, 0]], 'not batched yet');
  t.same(leafOf(await find(reformed)), [['s-b-9', 'b-9', 2, 4, 1]], 'the later leaf of a re-formed record');
  t.same(await find(batchedNotIndexed), [], 'not indexed yet');
  const envelope = (await find(rewritten))[0];
  t.match(envelope, { ingestId: rewritten.ingestId, clientId: 'app', recordHash: rewritten.recordHash, acceptedAtMs: Date.parse(rewritten.acceptedAt) });
  t.same(envelope?.envelope, { hashScheme: 'dris-v1', tenantId: 't-u', database: 'erp', collection: 'invoices', recordId: rewritten.recordId, recordVersion: '1', operationType: 'upsert', sourceTimestamp: null, payloadHash: rewritten.payloadHash, salt: rewritten.salt });

  // Indexed after the upgrade: its look-up row has no leaf, which record_leaves supplies.
  await upgraded.records.insertRecords([batchedNotIndexed]);
  t.same(leafOf(await find(batchedNotIndexed)), [['s-b-9', 'b-9', 1, 4, 1]]);
  const trace = await new ClickHousePipelineStore(upgraded.database).traceRecord('t-u', { collection: 'invoices', recordId: batchedNotIndexed.recordId });
  t.same(trace.map((x) => [x.batchId, x.leafIndex]), [['b-9', 1]]);

  // A back-fill repeated (a crash before its bookkeeping row) changes no answer.
  for (const name of ['back-fill record_lookup', 'back-fill record_evidence', 'back-fill record_evidence_by_hash', 'back-fill record_evidence_packed']) {
    const backFill = migrations(db).find((m) => m.name === name);
    if (backFill === undefined) throw new Error(`no migration ${name}`);
    await raw.exec(backFill.sql);
  }
  t.same(leafOf(await find(leafStored)), [['s-b-9', 'b-9', 0, 4, 1]]);
  t.same(leafOf(await find(reformed)), [['s-b-9', 'b-9', 2, 4, 1]]);
  await upgraded.database.migrate();
  t.equal((await raw.query(`SELECT version FROM ${db}.schema_migrations FINAL`)).length, migrations(db).length);
});

void t.test("the indexer's and the pipeline's rows of a record differ only in leaf and version", async (t) => {
  await raw.query('SYSTEM STOP MERGES dris.record_evidence_packed');
  t.teardown(() => raw.query('SYSTEM START MERGES dris.record_evidence_packed'));
  const store = new ClickHousePipelineStore(index.database);
  const r = record('t-x', { sourceTimestamp: '2025-05-31T23:59:59+02:00', operationType: 'insert', recordVersion: '7' });
  await index.records.insertRecords([r]);
  const formed = formBatch([r], hashing, BASE_MS);
  await store.saveFormedBatches([formed]);
  const rows = await raw.query<Record<string, unknown> & { row: string }>(`SELECT * EXCEPT (version, key_hash) FROM dris.record_evidence_packed WHERE tenant_id = 't-x' ORDER BY version`);
  t.equal(rows.length, 2);
  // The view packs in SQL what the pipeline packs in TypeScript: the same text but for the leaf and the version.
  const [indexed, batched] = rows.map(({ row, ...key }) => ({ key, ...packed(row) }));
  t.same(indexed?.key, batched?.key);
  t.same(indexed?.head.slice(0, 7), batched?.head.slice(0, 7));
  t.same([indexed?.head[7], typeof batched?.head[7]], [1, 'number']);
  t.same(indexed?.evidence.slice(0, 7), batched?.evidence.slice(0, 7));
  t.same(indexed?.evidence.slice(7), [null, null, null, null, []]);
  const leaf = formed.assignments[0];
  t.same(batched?.evidence.slice(7), [leaf?.snapshotId, leaf?.batchId, leaf?.leafIndex, leaf?.treeSize, leaf?.proof]);
  t.match(indexed?.key, { record_version: '7', accepted_at: dateTime64Text(Date.parse(r.acceptedAt)) });
  t.same(indexed?.evidence.slice(0, 3), ['app', 'insert', '2025-05-31T23:59:59+02:00']);
});

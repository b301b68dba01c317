import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { ChdbIndex, ChdbSqlRunner } from '../../src/adapters/index/chdb-index.js';
import { ClickHouseEvidenceStore } from '../../src/adapters/index/clickhouse-evidence-store.js';
import { ClickHousePipelineStore } from '../../src/adapters/index/clickhouse-pipeline-store.js';
import { migrations } from '../../src/adapters/index/sql.js';
import type { AuditEvent } from '../../src/domain/audit/ports.js';
import { verificationAuditEvent } from '../../src/domain/audit/verification-events.js';
import type { ApiKeyRecord } from '../../src/domain/keys/types.js';
import type { AcceptedRecord, RecordSummary } from '../../src/domain/records/types.js';
import type { VerificationHistoryEntry } from '../../src/domain/verification/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-chdb-index-'));
const path = join(root, 'clickhouse');
t.teardown(() => {
  rmSync(root, { recursive: true, force: true });
});

const BASE_MS = Date.parse('2025-03-01T10:00:00.000Z');

function hex(seed: string, length: number): string {
  return Buffer.from(seed.repeat(Math.ceil(length / 2 / seed.length) + 1)).toString('hex').slice(0, length);
}

let seq = 0;
function record(tenantId: string, over: Partial<AcceptedRecord> & { atMs?: number } = {}): AcceptedRecord {
  seq += 1;
  const { atMs, ...rest } = over;
  return {
    hashScheme: 'dris-v1',
    tenantId,
    database: 'crm',
    collection: 'customers',
    recordId: `rec-${seq}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: hex(`p${seq}`, 64),
    salt: hex(`s${seq}`, 32),
    ingestId: `ing-${String(seq).padStart(8, '0')}`,
    clientId: 'app-1',
    keyId: 'key-1',
    recordHash: hex(`r${seq}`, 64),
    acceptedAt: new Date(atMs ?? BASE_MS + seq).toISOString(),
    payload: JSON.stringify({ n: seq, text: 'x'.repeat(200) }),
    idempotencyKey: null,
    correlationId: `corr-${seq}`,
    ...rest,
  };
}

function summaryOf(r: AcceptedRecord): RecordSummary {
  return {
    ingestId: r.ingestId,
    tenantId: r.tenantId,
    clientId: r.clientId,
    database: r.database,
    collection: r.collection,
    recordId: r.recordId,
    recordVersion: r.recordVersion,
    operationType: r.operationType,
    sourceTimestamp: r.sourceTimestamp,
    acceptedAt: r.acceptedAt,
    payloadHash: r.payloadHash,
    recordHash: r.recordHash,
    salt: r.salt,
    hashScheme: r.hashScheme,
    status: 'Ingested',
    snapshotId: null,
    batchId: null,
    chainTxHash: null,
  };
}

let index = new ChdbIndex({ path });
// A second runner on the same directory shares the engine (chDB allows that within a process)
// and reads the tables directly, without FINAL where the test needs to see stored rows.
let raw = new ChdbSqlRunner(path, 30_000);

async function storedRows(tenantId: string): Promise<number> {
  const rows = await raw.query<{ n: number | string }>('SELECT count() AS n FROM dris.records WHERE tenant_id = {t:String}', {
    t: tenantId,
  });
  return Number(rows[0]?.n);
}

async function allPages(tenantId: string, limit: number, extra: Partial<Parameters<ChdbIndex['queryRecords']>[0]> = {}): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = null;
  do {
    const page = await index.queryRecords({ tenantId, limit, ...extra, ...(cursor === null ? {} : { cursor }) });
    pages.push(page.items.map((i) => i.ingestId));
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

void t.test('migrate is idempotent and records each version once', async (t) => {
  await index.migrate();
  await index.migrate();
  const versions = await raw.query<{ version: number | string }>('SELECT version FROM dris.schema_migrations ORDER BY version');
  t.same(versions.map((v) => Number(v.version)), migrations('dris').map((m) => m.version));
  const tables = await raw.query<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = 'dris' ORDER BY name`,
  );
  t.same(tables.map((r) => r.name), [
    'api_keys',
    'audit_events',
    'batches',
    'record_evidence',
    'record_evidence_from_lookup',
    'record_evidence_from_records',
    'record_leaves',
    'record_lookup',
    'records',
    'retrieval_policies',
    'schema_migrations',
    'snapshot_lifecycle',
    'snapshots',
    'verifications',
  ]);
  const engines = await raw.query<{ name: string; engine: string; sorting_key: string }>(
    `SELECT name, engine, sorting_key FROM system.tables WHERE database = 'dris' AND name IN ('records', 'record_leaves', 'record_lookup', 'record_evidence', 'api_keys', 'audit_events')`,
  );
  t.same(
    Object.fromEntries(engines.map((e) => [e.name, [e.engine, e.sorting_key]])),
    {
      records: ['ReplacingMergeTree', 'tenant_id, accepted_at, ingest_id'],
      record_leaves: ['ReplacingMergeTree', 'tenant_id, ingest_id'],
      record_lookup: ['ReplacingMergeTree', 'tenant_id, collection, record_id, database, record_version, ingest_id'],
      record_evidence: ['ReplacingMergeTree', 'tenant_id, collection, record_id, database, record_version, ingest_id'],
      api_keys: ['ReplacingMergeTree', 'key_id'],
      audit_events: ['MergeTree', 'tenant_id, at, event_id'],
    },
  );
  const settings = await raw.query<{ name: string; create_table_query: string }>(
    `SELECT name, create_table_query FROM system.tables WHERE database = 'dris' AND name IN ('verifications', 'audit_events') ORDER BY name`,
  );
  t.same(
    settings.map((r) => [r.name, /merge_selector_base = 10/.test(r.create_table_query), /fsync_after_insert = 1/.test(r.create_table_query)]),
    [
      ['audit_events', true, true],
      ['verifications', true, true],
    ],
    'without a journal, their inserts fsync',
  );
});

void t.test('insert then query: values, filters, time range, paging', async (t) => {
  const tenant = 'tenant-q';
  const recs: AcceptedRecord[] = [];
  for (let i = 0; i < 25; i++) {
    recs.push(
      record(tenant, {
        atMs: BASE_MS + i * 1000,
        database: i % 2 === 0 ? 'crm' : 'erp',
        collection: i % 3 === 0 ? 'orders' : 'customers',
        operationType: i % 4 === 0 ? 'insert' : 'upsert',
        sourceTimestamp: i === 3 ? '2025-02-28T23:59:59+01:00' : null,
        idempotencyKey: i === 4 ? 'idem-4' : null,
      }),
    );
  }
  // Five records sharing one acceptedAt: paging must break the tie by ingestId.
  for (let i = 0; i < 5; i++) recs.push(record(tenant, { atMs: BASE_MS + 30_000 }));
  await index.insertRecords(recs.slice(0, 10));
  await index.insertRecords(recs.slice(10));
  await index.insertRecords([record('tenant-other', { atMs: BASE_MS })]);

  const expected = [...recs].sort((a, b) =>
    a.acceptedAt === b.acceptedAt ? (a.ingestId < b.ingestId ? -1 : 1) : a.acceptedAt < b.acceptedAt ? -1 : 1,
  );

  const all = await index.queryRecords({ tenantId: tenant, limit: 100 });
  t.same(all.items, expected.map(summaryOf));
  t.equal(all.nextCursor, null);

  const pages = await allPages(tenant, 7);
  t.same(pages.map((p) => p.length), [7, 7, 7, 7, 2]);
  t.same(pages.flat(), expected.map((r) => r.ingestId));
  const tiePages = await allPages(tenant, 2, { fromMs: BASE_MS + 30_000 });
  t.same(tiePages.flat(), expected.slice(25).map((r) => r.ingestId));

  const byDb = await index.queryRecords({ tenantId: tenant, database: 'erp', limit: 100 });
  t.same(byDb.items.map((i) => i.ingestId), expected.filter((r) => r.database === 'erp').map((r) => r.ingestId));
  const byDbColl = await index.queryRecords({ tenantId: tenant, database: 'crm', collection: 'orders', limit: 100 });
  t.same(
    byDbColl.items.map((i) => i.ingestId),
    expected.filter((r) => r.database === 'crm' && r.collection === 'orders').map((r) => r.ingestId),
  );
  const target = recs[7];
  if (target === undefined) throw new Error('fixture');
  const byRecord = await index.queryRecords({ tenantId: tenant, recordId: target.recordId, limit: 10 });
  t.same(byRecord.items, [summaryOf(target)]);

  // [from, to): from inclusive, to exclusive.
  const range = await index.queryRecords({ tenantId: tenant, fromMs: BASE_MS + 5000, toMs: BASE_MS + 9000, limit: 100 });
  t.same(range.items.map((i) => i.acceptedAt), [5, 6, 7, 8].map((s) => new Date(BASE_MS + s * 1000).toISOString()));

  t.same((await index.queryRecords({ tenantId: tenant, snapshotId: 'snap-none', limit: 10 })).items, []);
  t.same((await index.queryRecords({ tenantId: 'tenant-nobody', limit: 10 })).items, []);

  await t.rejects(index.queryRecords({ tenantId: tenant, limit: 10, cursor: 'not-a-cursor' }), { code: 'validation_failed' });
  await t.rejects(index.queryRecords({ tenantId: tenant, limit: 0 }), { code: 'validation_failed' });
});

void t.test('values with quotes, backslashes and newlines are parameters, not SQL', async (t) => {
  const tenant = "tenant-'x";
  const nasty = "a'b\\c\nd\t\u00e9\u{1F600}') OR 1=1 --";
  const r = record(tenant, { recordId: nasty, collection: nasty, database: "db'", payload: JSON.stringify({ q: nasty }) });
  await index.insertRecords([r]);
  const page = await index.queryRecords({ tenantId: tenant, recordId: nasty, collection: nasty, database: "db'", limit: 5 });
  t.same(page.items, [summaryOf(r)]);
  const none = await index.queryRecords({ tenantId: tenant, recordId: "x' OR '1'='1", limit: 5 });
  t.same(none.items, []);
});

void t.test('200 concurrent insertRecords calls are coalesced into few INSERTs', async (t) => {
  const tenant = 'tenant-c';
  const recs = Array.from({ length: 200 }, () => record(tenant));
  const before = index.stats();
  await Promise.all(recs.map((r) => index.insertRecords([r])));
  const after = index.stats();
  const inserts = after.recordInserts - before.recordInserts;
  t.ok(inserts >= 1 && inserts <= 5, `INSERT statements: ${inserts}`);
  t.equal(after.recordRowsInserted - before.recordRowsInserted, 200);
  t.equal(await storedRows(tenant), 200);
  const pages = await allPages(tenant, 1000);
  t.same(new Set(pages.flat()), new Set(recs.map((r) => r.ingestId)));
});

void t.test('a redelivered record never makes a second row', async (t) => {
  const tenant = 'tenant-r';
  const recs = Array.from({ length: 50 }, () => record(tenant));
  await index.insertRecords(recs);
  const before = index.stats();
  // Sequential redelivery, concurrent redelivery, and duplicates inside one call.
  await index.insertRecords(recs);
  await Promise.all([index.insertRecords(recs.slice(0, 30)), index.insertRecords(recs.slice(20)), index.insertRecords(recs)]);
  await index.insertRecords([...recs.slice(0, 5), ...recs.slice(0, 5)]);
  const after = index.stats();
  t.equal(after.recordRowsInserted - before.recordRowsInserted, 0);
  t.equal(after.recordDuplicatesSkipped - before.recordDuplicatesSkipped, 50 + 30 + 30 + 50 + 10);
  t.equal(await storedRows(tenant), 50);
  // Mixed: new and already indexed records in one call; only the new ones are written.
  const fresh = Array.from({ length: 3 }, () => record(tenant));
  await index.insertRecords([...recs.slice(0, 10), ...fresh]);
  t.equal(await storedRows(tenant), 53);
  t.equal((await index.queryRecords({ tenantId: tenant, limit: 1000 })).items.length, 53);
});

void t.test('a pipeline rewrite with a higher row_version replaces the row', async (t) => {
  // What the batch assignment of the pipeline does, as documented in sql.ts.
  const tenant = 'tenant-p';
  const recs = Array.from({ length: 4 }, () => record(tenant));
  await index.insertRecords(recs);
  const ids = recs.slice(0, 3).map((r) => r.ingestId);
  await raw.exec(
    `INSERT INTO dris.records
     SELECT * REPLACE ({snap:String} AS snapshot_id, {batch:String} AS batch_id,
                       toUInt32(indexOf({ids:Array(String)}, ingest_id) - 1) AS leaf_index,
                       toUInt32(length({ids:Array(String)})) AS tree_size,
                       'PendingAnchor' AS status, toUInt64(2) AS row_version)
     FROM dris.records FINAL
     WHERE tenant_id = {t:String} AND ingest_id IN {ids:Array(String)}`,
    { snap: 'snap-1', batch: 'batch-1', ids, t: tenant },
  );
  const snap = await index.queryRecords({ tenantId: tenant, snapshotId: 'snap-1', limit: 10 });
  t.same(
    snap.items.map((i) => [i.ingestId, i.snapshotId, i.batchId, i.status]),
    ids.map((id) => [id, 'snap-1', 'batch-1', 'PendingAnchor']),
  );
  const all = await index.queryRecords({ tenantId: tenant, limit: 10 });
  t.same(all.items.map((i) => i.status), ['PendingAnchor', 'PendingAnchor', 'PendingAnchor', 'Ingested']);
  // The indexer seeing these records again must not bring the old version back.
  await index.insertRecords(recs);
  await raw.exec('OPTIMIZE TABLE dris.records FINAL');
  t.equal(await storedRows(tenant), 4);
  const leaf = await raw.query<{ leaf_index: number | null; row_version: number | string }>(
    'SELECT leaf_index, row_version FROM dris.records WHERE tenant_id = {t:String} ORDER BY accepted_at, ingest_id',
    { t: tenant },
  );
  t.same(leaf.map((r) => [r.leaf_index, Number(r.row_version)]), [[0, 2], [1, 2], [2, 2], [null, 1]]);
});

void t.test('leaves in record_leaves are joined to the rows; the later version of a leaf wins', async (t) => {
  const tenant = 'tenant-l';
  const recs = Array.from({ length: 4 }, () => record(tenant));
  await index.insertRecords(recs);
  const store = new ClickHousePipelineStore(index.runner, index.database);
  const evidence = new ClickHouseEvidenceStore(index.runner, index.database);
  const ids = recs.slice(0, 3).map((r) => r.ingestId);
  const leaves = (snapshotId: string, batchId: string, version: number): object[] =>
    ids.map((ingestId, leafIndex) => ({ tenant_id: tenant, ingest_id: ingestId, snapshot_id: snapshotId, batch_id: batchId, leaf_index: leafIndex, tree_size: 3, merkle_proof: [hex(`${batchId}${leafIndex}`, 64)], version }));
  // A write that stopped before its batch row, then the batch its records were formed into instead.
  await raw.insertJsonEachRow('dris.record_leaves', leaves('snap-orphan', 'batch-orphan', 1));
  await raw.insertJsonEachRow('dris.record_leaves', leaves('snap-2', 'batch-2', 2));

  const all = await index.queryRecords({ tenantId: tenant, limit: 10 });
  t.same(
    all.items.map((i) => [i.ingestId, i.snapshotId, i.batchId, i.status]),
    [...ids.map((id) => [id, 'snap-2', 'batch-2', 'Batched']), [recs[3]?.ingestId, null, null, 'Ingested']],
  );
  const snap = await index.queryRecords({ tenantId: tenant, snapshotId: 'snap-2', limit: 10 });
  t.same(snap.items, [], 'no snapshot row: the listing by snapshot finds its records through the snapshot');
  await store.putSnapshots(
    [{ snapshotId: 'snap-2', tenantId: tenant, batchId: 'batch-2', status: 'Anchored', recordIds: recs.slice(0, 3).map((r) => r.recordId), ingestIds: ids, recordCount: 3, snapshotHash: hex('h', 64), merkleRoot: hex('m', 64), anchorTimestampMs: BASE_MS, onChainConfirmed: true, chainTxHash: `0x${hex('t', 64)}`, createdAtMs: BASE_MS }],
    [],
  );
  const anchored = await index.queryRecords({ tenantId: tenant, snapshotId: 'snap-2', limit: 10 });
  t.same(anchored.items.map((i) => [i.ingestId, i.status, i.chainTxHash]), ids.map((id) => [id, 'Anchored', `0x${hex('t', 64)}`]));
  t.same((await index.queryRecords({ tenantId: tenant, snapshotId: 'snap-orphan', limit: 10 })).items, []);
  const page = await index.queryRecords({ tenantId: tenant, limit: 2 });
  t.same(page.items.map((i) => i.snapshotId), ['snap-2', 'snap-2'], 'a page joins the leaves of its own rows');

  const found = await evidence.findRecord({ tenantId: tenant, collection: 'customers', recordId: recs[1]?.recordId ?? '' });
  t.same(found.map((r) => [r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [['snap-2', 'batch-2', 1, 3, [hex('batch-21', 64)]]]);
  const byHash = await evidence.findByHash(tenant, 'recordHash', recs[2]?.recordHash ?? '', 10);
  t.same(byHash.map((r) => [r.ingestId, r.leafIndex]), [[ids[2], 2]]);
  const unbatched = await evidence.findRecord({ tenantId: tenant, collection: 'customers', recordId: recs[3]?.recordId ?? '' });
  t.same(unbatched.map((r) => [r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [[null, null, null, null, []]]);
  const trace = await store.traceRecord(tenant, { collection: 'customers', recordId: recs[0]?.recordId ?? '' });
  t.same(trace.map((r) => [r.snapshotId, r.leafIndex, r.merkleProof]), [['snap-2', 0, [hex('batch-20', 64)]]]);
  await evidence.close();
});

void t.test('a 10k-record call is stored whole', async (t) => {
  const tenant = 'tenant-big';
  const recs = Array.from({ length: 10_000 }, () => record(tenant));
  const started = process.hrtime.bigint();
  await index.insertRecords(recs);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  t.comment(`10k records in ${ms.toFixed(0)} ms (${Math.round(10_000 / (ms / 1000))} rows/s; informative only)`);
  t.equal(await storedRows(tenant), 10_000);
});

void t.test('api keys: put, get, list, count, revoke by re-put', async (t) => {
  const key = (keyId: string, tenantId: string, createdAtMs: number, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
    keyId,
    tenantId,
    clientId: 'cli',
    level: 'standard',
    secretHash: hex(keyId, 64),
    createdAtMs,
    expiresAtMs: null,
    revokedAtMs: null,
    alsoTenants: [],
    rotatedFrom: null,
    ...over,
  });
  t.equal(await index.countKeys(), 0);
  t.equal(await index.getKey('k-missing'), null);
  const a = key('k-a', 'ten-1', BASE_MS, { level: 'premium', expiresAtMs: BASE_MS + 86_400_000, alsoTenants: ['ten-2', 'ten-3'] });
  const b = key('k-b', 'ten-1', BASE_MS + 1000, { rotatedFrom: 'k-a' });
  const c = key('k-c', 'ten-2', BASE_MS + 2000, { level: 'enterprise' });
  await index.putKey(a);
  await index.putKey(b);
  await index.putKey(c);
  t.same(await index.getKey('k-a'), a);
  t.same(await index.listKeys('ten-1'), [b, a]);
  t.same(await index.listKeys(), [c, b, a]);
  t.equal(await index.countKeys(), 3);

  // Revocation right after creation (same millisecond) must still win.
  const revoked = { ...a, revokedAtMs: BASE_MS + 5000 };
  await index.putKey(revoked);
  t.same(await index.getKey('k-a'), revoked);
  t.equal(await index.countKeys(), 3);
  t.same(await index.listKeys('ten-1'), [b, revoked]);
});

/** Every event of a tenant's trail, a page of `limit` at a time, following the cursors. */
async function auditPages(tenantId: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p = await index.query({ tenantId, limit, ...(cursor === null ? {} : { cursor }) });
    ids.push(...p.items.map((i) => i.eventId));
    cursor = p.nextCursor;
    pages += 1;
  } while (cursor !== null && pages < 50);
  return { ids, pages };
}

void t.test('audit: append coalesced, query newest first with filters and paging', async (t) => {
  const tenant = 'tenant-a';
  const ev = (i: number, over: Partial<AuditEvent> = {}): AuditEvent => ({
    eventId: `ev-${String(i).padStart(4, '0')}`,
    atMs: BASE_MS + Math.floor(i / 2) * 1000,
    tenantId: tenant,
    clientId: i % 2 === 0 ? 'cli-even' : 'cli-odd',
    keyId: i % 3 === 0 ? 'key-3' : 'key-x',
    action: i % 5 === 0 ? 'key.create' : 'record.ingest',
    resource: `record:${i}`,
    outcome: 'success',
    correlationId: `corr-${i}`,
    ...over,
  });
  const events = Array.from({ length: 40 }, (_, i) => ev(i, i === 7 ? { detail: { count: 3, list: ['a'] } } : i === 8 ? { detail: {} } : {}));
  const before = index.stats();
  await Promise.all(events.map((e) => index.append([e])));
  t.ok(index.stats().auditInserts - before.auditInserts <= 5);
  // An append retried after an ambiguous failure: the event is listed once.
  const dup = events[11];
  if (dup === undefined) throw new Error('fixture');
  await index.append([dup]);
  await index.append([ev(99, { tenantId: 'tenant-b' })]);

  const newestFirst = [...events].sort((x, y) => (x.atMs === y.atMs ? (x.eventId < y.eventId ? 1 : -1) : y.atMs - x.atMs));
  const page = await index.query({ tenantId: tenant, limit: 100 });
  t.same(page.items, newestFirst);
  t.equal(page.nextCursor, null);

  const paged = await auditPages(tenant, 6);
  t.equal(paged.pages, 7);
  t.same(paged.ids, newestFirst.map((e) => e.eventId));

  const byAction = await index.query({ tenantId: tenant, action: 'key.create', limit: 100 });
  t.same(byAction.items.map((e) => e.eventId), newestFirst.filter((e) => e.action === 'key.create').map((e) => e.eventId));
  const byKey = await index.query({ tenantId: tenant, keyId: 'key-3', clientId: 'cli-even', limit: 100 });
  t.same(
    byKey.items.map((e) => e.eventId),
    newestFirst.filter((e) => e.keyId === 'key-3' && e.clientId === 'cli-even').map((e) => e.eventId),
  );
  const byTime = await index.query({ tenantId: tenant, fromMs: BASE_MS + 3000, toMs: BASE_MS + 5000, limit: 100 });
  t.same(byTime.items.map((e) => e.eventId), ['ev-0009', 'ev-0008', 'ev-0007', 'ev-0006']);
  t.same((await index.query({ tenantId: 'tenant-b', limit: 10 })).items.map((e) => e.eventId), ['ev-0099']);
});

void t.test('audit: verifications are listed from their history rows, beside the events', async (t) => {
  const tenant = 'tenant-v';
  const evidence = new ClickHouseEvidenceStore(index.runner, index.database);
  const at = (i: number): number => BASE_MS + 100_000 + i * 1000;
  const modes = ['stored', 'payload', 'batch', 'hash', 'snapshot'] as const;
  const entry = (i: number, over: Partial<VerificationHistoryEntry> = {}): VerificationHistoryEntry => {
    const mode = modes[i % modes.length] ?? 'stored';
    const onRecord = mode !== 'snapshot' && mode !== 'hash';
    return {
      verificationId: `ver-${String(i).padStart(4, '0')}`,
      at: new Date(at(i)).toISOString(),
      tenantId: tenant,
      clientId: i % 2 === 0 ? 'cli-even' : 'cli-odd',
      keyId: i % 3 === 0 ? 'key-3' : 'key-x',
      mode,
      database: onRecord ? 'erp' : null,
      collection: onRecord ? 'invoices' : null,
      recordId: onRecord ? `inv-${i}` : null,
      recordVersion: onRecord ? '1' : null,
      snapshotId: onRecord ? null : `snap-${i}`,
      batchId: i % 4 === 0 ? null : `batch-${i}`,
      verified: i % 5 !== 1,
      verificationStatus: i % 5 === 1 ? 'fail' : 'pass',
      reasonCategory: i % 5 === 1 ? 'payload_mismatch' : 'verified_anchored',
      correlationId: `corr-v${i}`,
      ...over,
    };
  };
  const ev = (i: number): AuditEvent => ({
    eventId: `ev-${String(i).padStart(4, '0')}`,
    atMs: at(i),
    tenantId: tenant,
    clientId: 'cli-even',
    keyId: 'key-3',
    action: 'evidence.access',
    resource: `record:invoices/inv-${i}`,
    outcome: 'allowed',
    correlationId: `corr-e${i}`,
    detail: { purpose: 'audit' },
  });
  const entries = Array.from({ length: 20 }, (_, i) => entry(i));
  const events = Array.from({ length: 10 }, (_, i) => ev(i * 2 + 1));
  await Promise.all(entries.map((e) => evidence.append([e])));
  await index.append(events);
  // A retried append stores an entry twice; the entry of another tenant stays there.
  await evidence.append([entries[4] ?? entry(4)]);
  await evidence.append([entry(50, { tenantId: 'tenant-w' })]);
  // What an earlier version wrote beside each history row: the same facts, not listed again.
  await index.append(entries.slice(0, 5).map((e) => ({ ...verificationAuditEvent(e), eventId: `old-${e.verificationId}` })));

  const expected = [...entries.map(verificationAuditEvent), ...events].sort((x, y) => y.atMs - x.atMs || (x.eventId < y.eventId ? 1 : -1));
  t.same((await index.query({ tenantId: tenant, limit: 100 })).items, expected);
  const listed = new Map((await index.query({ tenantId: tenant, limit: 100 })).items.map((e) => [e.eventId, e]));
  t.same(listed.get('ver-0001'), {
    eventId: 'ver-0001',
    atMs: at(1),
    tenantId: tenant,
    clientId: 'cli-odd',
    keyId: 'key-x',
    action: 'verify.record',
    resource: 'record:invoices/inv-1',
    outcome: 'fail',
    correlationId: 'corr-v1',
    detail: { reasonCategory: 'payload_mismatch', mode: 'payload', verified: false },
  });
  t.match(listed.get('ver-0003'), { action: 'verify.payload', resource: 'snapshot:snap-3', detail: { mode: 'hash', verified: true } });
  t.match(listed.get('ver-0004'), { action: 'verify.snapshot', resource: 'snapshot:snap-4', outcome: 'pass' });

  t.same((await auditPages(tenant, 4)).ids, expected.map((e) => e.eventId), 'pages across both tables, in order, without overlap');

  for (const action of ['verify.record', 'verify.payload', 'verify.snapshot', 'evidence.access']) {
    const page = await index.query({ tenantId: tenant, action, limit: 100 });
    t.same(page.items, expected.filter((e) => e.action === action), action);
    t.ok(page.items.length > 0, `${action} is reached`);
  }
  const byActor = await index.query({ tenantId: tenant, keyId: 'key-3', clientId: 'cli-even', limit: 100 });
  t.same(byActor.items, expected.filter((e) => e.keyId === 'key-3' && e.clientId === 'cli-even'));
  const byTime = await index.query({ tenantId: tenant, fromMs: at(3), toMs: at(6), limit: 100 });
  t.same(byTime.items.map((e) => e.eventId), ['ver-0005', 'ev-0005', 'ver-0004', 'ver-0003', 'ev-0003']);
  t.same((await index.query({ tenantId: 'tenant-w', limit: 10 })).items, [verificationAuditEvent(entry(50, { tenantId: 'tenant-w' }))]);
  await evidence.close();
});

void t.test('engine errors become DrisErrors; insert errors carry no row data', async (t) => {
  await t.rejects(raw.query('SELECT * FROM dris.no_such_table'), { code: 'internal_error' });
  const secret = 'PAYLOAD-MUST-NOT-LEAK';
  const err = await raw
    .insertJsonEachRow('dris.records', [{ tenant_id: 't', accepted_at: 'not a time', payload: secret }])
    .then(
      () => null,
      (e: unknown) => e,
    );
  t.ok(err instanceof DrisError);
  t.equal((err as DrisError).code, 'internal_error');
  const cause = (err as DrisError).cause;
  t.notOk(String(cause instanceof Error ? cause.message : cause).includes(secret));
  t.notOk((err as DrisError).message.includes(secret));
});

const execFileP = promisify(execFile);

void t.test('data persists across sessions and processes', async (t) => {
  const tenant = 'tenant-d';
  const recs = Array.from({ length: 20 }, () => record(tenant));
  await index.insertRecords(recs);
  await index.append([
    { eventId: 'persist-1', atMs: BASE_MS, tenantId: tenant, clientId: 'c', keyId: 'k', action: 'record.ingest', resource: 'r', outcome: 'success', correlationId: 'x' },
  ]);
  await raw.close();
  await index.close();
  await t.rejects(index.queryRecords({ tenantId: tenant, limit: 1 }), { code: 'dependency_unavailable' });
  await t.rejects(index.insertRecords([record(tenant)]), { code: 'dependency_unavailable' });

  // A second process may open the directory once this one has let go of it (chDB locks it).
  const moduleUrl = new URL('../../src/adapters/index/chdb-index.js', import.meta.url).href;
  const child = `
    const { ChdbIndex } = await import(${JSON.stringify(moduleUrl)});
    const { setLogLevel } = await import(${JSON.stringify(new URL('../../src/util/logger.js', import.meta.url).href)});
    setLogLevel('silent');
    const index = new ChdbIndex({ path: ${JSON.stringify(path)} });
    await index.migrate();
    const page = await index.queryRecords({ tenantId: ${JSON.stringify(tenant)}, limit: 1000 });
    const audit = await index.query({ tenantId: ${JSON.stringify(tenant)}, limit: 10 });
    await index.insertRecords([${JSON.stringify(record(tenant))}]);
    await index.close();
    process.stdout.write(JSON.stringify({ ids: page.items.map((i) => i.ingestId), events: audit.items.map((e) => e.eventId) }));
  `;
  const projectRoot = fileURLToPath(new URL('../../..', import.meta.url));
  const { stdout } = await execFileP(process.execPath, ['--input-type=module', '-e', child], { cwd: projectRoot });
  const seen = JSON.parse(stdout) as { ids: string[]; events: string[] };
  t.same(seen.ids, recs.map((r) => r.ingestId));
  t.same(seen.events, ['persist-1']);

  // And this process again, after the child closed: it sees what the child wrote.
  index = new ChdbIndex({ path });
  raw = new ChdbSqlRunner(path, 30_000);
  await index.migrate();
  t.equal((await index.queryRecords({ tenantId: tenant, limit: 1000 })).items.length, 21);
  t.equal(await storedRows(tenant), 21);
  await raw.close();
  await index.close();
});

import { createServer } from 'node:net';
import t from 'tap';
import { ClickHouseDatabase } from '../../src/adapters/clickhouse/database.js';
import { GroupCommit } from '../../src/adapters/clickhouse/group-commit.js';
import { SERVER_LOOKUP_CHUNK, translateClickHouseError } from '../../src/adapters/clickhouse/http-runner.js';
import { openClickHouseStorage, type OpenStorageOptions } from '../../src/adapters/clickhouse/open-storage.js';
import type { ExecOptions, InsertSettings, SqlParams, SqlRunner } from '../../src/adapters/clickhouse/sql-runner.js';
import type { ClickHouseStorage } from '../../src/adapters/clickhouse/storage.js';
import { decodeCursor, encodeCursor } from '../../src/adapters/clickhouse/values.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

type Call =
  | { kind: 'exec'; sql: string; params: SqlParams | undefined }
  | { kind: 'query'; sql: string; params: SqlParams | undefined }
  | { kind: 'insert'; table: string; rows: readonly object[] };

/** A SqlRunner that records calls and answers queries from a handler. */
class FakeRunner implements SqlRunner {
  readonly parallelQueries = 1;
  readonly calls: Call[] = [];
  onQuery: (sql: string, params: SqlParams | undefined) => unknown[] = () => [];
  onInsert: (table: string, rows: readonly object[]) => void = () => undefined;
  closed = false;

  /** The timeoutMs each exec was given. */
  readonly timeouts: (number | undefined)[] = [];
  exec(sql: string, params?: SqlParams, options?: ExecOptions): Promise<void> {
    this.calls.push({ kind: 'exec', sql, params });
    this.timeouts.push(options?.timeoutMs);
    return Promise.resolve();
  }
  query<T>(sql: string, params?: SqlParams): Promise<T[]> {
    this.calls.push({ kind: 'query', sql, params });
    // A throwing handler becomes a rejection, as a real runner's failure would.
    return new Promise((resolve) => {
      resolve(this.onQuery(sql, params) as T[]);
    });
  }
  queryValues(sql: string, params?: SqlParams): Promise<string[]> {
    return this.query<string>(sql, params);
  }
  insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void> {
    let rows = lines.toString('utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    // As the engine reads them with this setting: an object member into a String column as its text.
    const objects = settings?.['input_format_json_read_objects_as_strings'] === 1;
    const arrays = settings?.['input_format_json_read_arrays_as_strings'] === 1;
    if (objects || arrays) {
      const asText = (v: unknown): boolean => v !== null && typeof v === 'object' && (Array.isArray(v) ? arrays : objects);
      rows = rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, asText(v) ? JSON.stringify(v) : v])));
    }
    return this.insertJsonEachRow(table, rows);
  }
  insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void> {
    const rows = lines
      .toString('utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const values = JSON.parse(l) as unknown[];
        if (values.length !== columns.length) throw new Error(`${values.length} values for ${columns.length} columns`);
        return Object.fromEntries(columns.map((c, i) => [c, values[i]]));
      });
    return this.insertJsonLines(table, Buffer.from(rows.map((r) => JSON.stringify(r) + '\n').join(''), 'utf8'), settings);
  }
  insertJsonEachRow(table: string, rows: readonly object[]): Promise<void> {
    this.calls.push({ kind: 'insert', table, rows });
    return new Promise((resolve) => {
      this.onInsert(table, rows);
      resolve();
    });
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
  of<K extends Call['kind']>(kind: K): Extract<Call, { kind: K }>[] {
    return this.calls.filter((c): c is Extract<Call, { kind: K }> => c.kind === kind);
  }
}

const OPTIONS = { url: 'http://127.0.0.1:1' } as const;

/** The storage on a ClickHouse server, its client replaced by `runner`. */
async function serverStorage(runner: SqlRunner, options: Omit<OpenStorageOptions, 'engine' | 'runner'> = {}): Promise<ClickHouseStorage> {
  return (await openClickHouseStorage({ ...options, engine: { kind: 'server', ...OPTIONS }, runner })).storage;
}
const BASE_MS = Date.parse('2025-03-01T10:00:00.000Z');

let seq = 0;
function record(tenantId: string, atMs = BASE_MS): AcceptedRecord {
  seq += 1;
  return {
    hashScheme: 'dris-v1',
    tenantId,
    database: 'crm',
    collection: 'customers',
    recordId: `rec-${seq}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: 'a'.repeat(64),
    salt: 'b'.repeat(32),
    ingestId: `ing-${seq}`,
    clientId: 'app',
    keyId: 'key',
    recordHash: 'c'.repeat(64),
    acceptedAt: new Date(atMs).toISOString(),
    payload: '{"a":1}',
    idempotencyKey: null,
    correlationId: 'corr',
  };
}

void t.test('migrate applies missing migrations in order, then only bootstraps', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner, { database: 'dris_test' });
  await index.database.migrate();
  const execs = runner.of('exec');
  t.match(execs[0]?.sql, /^CREATE DATABASE IF NOT EXISTS dris_test$/);
  t.match(execs[1]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.schema_migrations/);
  t.match(execs[2]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.records/);
  t.same(execs[3]?.params, { version: 1, name: 'create records' });
  t.match(execs[4]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.api_keys/);
  t.same(execs[5]?.params, { version: 2, name: 'create api_keys' });
  t.match(execs[6]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.audit_events/);
  t.same(execs[7]?.params, { version: 3, name: 'create audit_events' });
  t.match(execs[8]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.batches/);
  t.same(execs[9]?.params, { version: 4, name: 'create batches' });
  t.match(execs[10]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.snapshots/);
  t.same(execs[11]?.params, { version: 5, name: 'create snapshots' });
  t.match(execs[12]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.snapshot_lifecycle/);
  t.same(execs[13]?.params, { version: 6, name: 'create snapshot_lifecycle' });
  t.match(execs[14]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.verifications/);
  t.same(execs[15]?.params, { version: 7, name: 'create verifications' });
  t.match(execs[16]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.retrieval_policies/);
  t.same(execs[17]?.params, { version: 8, name: 'create retrieval_policies' });
  t.match(execs[18]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.record_leaves/);
  t.same(execs[19]?.params, { version: 9, name: 'create record_leaves' });
  t.match(execs[20]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.record_lookup\b/);
  t.same(execs[21]?.params, { version: 10, name: 'create record_lookup' });
  t.match(execs[22]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_lookup_from_records TO dris_test\.record_lookup/);
  t.same(execs[23]?.params, { version: 11, name: 'create record_lookup_from_records' });
  t.match(execs[24]?.sql, /^INSERT INTO dris_test\.record_lookup .*FROM dris_test\.records FINAL.*LEFT ANY JOIN.*FROM dris_test\.record_leaves FINAL/s);
  t.same(execs[25]?.params, { version: 12, name: 'back-fill record_lookup' });
  t.match(execs[26]?.sql, /^ALTER TABLE dris_test\.verifications MODIFY SETTING merge_selector_base = 10$/);
  t.same(execs[27]?.params, { version: 13, name: 'verifications merge wider' });
  t.match(execs[28]?.sql, /^ALTER TABLE dris_test\.audit_events MODIFY SETTING merge_selector_base = 10$/);
  t.same(execs[29]?.params, { version: 14, name: 'audit_events merge wider' });
  t.match(execs[30]?.sql, /CREATE TABLE IF NOT EXISTS dris_test\.record_evidence\b.*evidence +String CODEC\(LZ4\).*index_granularity = 16/s);
  t.same(execs[31]?.params, { version: 15, name: 'create record_evidence' });
  t.match(execs[32]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_from_records TO dris_test\.record_evidence AS\s+SELECT .*toJSONString\(tuple\(client_id, .*merkle_proof\)\) AS evidence, row_version AS version\s+FROM dris_test\.records$/s);
  t.same(execs[33]?.params, { version: 16, name: 'create record_evidence_from_records' });
  t.match(execs[34]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_from_lookup TO dris_test\.record_evidence AS.*FROM dris_test\.record_lookup$/s);
  t.same(execs[35]?.params, { version: 17, name: 'create record_evidence_from_lookup' });
  t.match(execs[36]?.sql, /^INSERT INTO dris_test\.record_evidence .*FROM dris_test\.record_lookup$/s);
  t.same(execs[37]?.params, { version: 18, name: 'back-fill record_evidence' });
  t.equal(execs[38]?.sql, 'DROP VIEW IF EXISTS dris_test.record_lookup_from_records');
  t.same(execs[39]?.params, { version: 19, name: 'drop record_lookup_from_records' });
  t.equal(execs[40]?.sql, 'ALTER TABLE dris_test.batches MODIFY COLUMN version UInt128');
  t.same(execs[41]?.params, { version: 20, name: 'batches version carries the leader epoch' });
  t.equal(execs[42]?.sql, 'ALTER TABLE dris_test.snapshots MODIFY COLUMN version UInt128');
  t.same(execs[43]?.params, { version: 21, name: 'snapshots version carries the leader epoch' });
  t.equal(execs[44]?.sql, 'ALTER TABLE dris_test.snapshot_lifecycle ADD COLUMN IF NOT EXISTS epoch UInt64 DEFAULT 0');
  t.same(execs[45]?.params, { version: 22, name: 'snapshot_lifecycle epoch' });
  t.equal(execs[46]?.sql, 'ALTER TABLE dris_test.record_evidence MODIFY SETTING merge_selector_base = 5');
  t.same(execs[47]?.params, { version: 23, name: 'record_evidence merges in default steps' });
  t.match(execs[48]?.sql, /^CREATE TABLE IF NOT EXISTS dris_test\.batch_blocks\n/);
  t.same(execs[49]?.params, { version: 24, name: 'create batch_blocks' });
  t.match(execs[50]?.sql, /^CREATE TABLE IF NOT EXISTS dris_test\.record_evidence_by_hash\n\(\n {4}key_hash +UInt64 DEFAULT reinterpretAsUInt64\(substring\(SHA256\(.*PRIMARY KEY key_hash\nORDER BY \(key_hash, tenant_id, collection, record_id, database, record_version, ingest_id\)\nSETTINGS index_granularity = 16,/s);
  t.same(execs[51]?.params, { version: 25, name: 'create record_evidence_by_hash' });
  t.match(execs[52]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_by_hash_from_records TO dris_test\.record_evidence_by_hash AS\s+SELECT .*toJSONString\(tuple\(client_id, .*merkle_proof\)\) AS evidence, row_version AS version\s+FROM dris_test\.records$/s);
  t.same(execs[53]?.params, { version: 26, name: 'create record_evidence_by_hash_from_records' });
  t.match(execs[54]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_by_hash_from_evidence TO dris_test\.record_evidence_by_hash AS.*FROM dris_test\.record_evidence$/s);
  t.same(execs[55]?.params, { version: 27, name: 'create record_evidence_by_hash_from_evidence' });
  t.equal(execs[56]?.sql, 'DROP VIEW IF EXISTS dris_test.record_evidence_from_records');
  t.same(execs[57]?.params, { version: 28, name: 'drop record_evidence_from_records' });
  t.match(execs[58]?.sql, /^INSERT INTO dris_test\.record_evidence_by_hash .*FROM dris_test\.record_evidence$/s);
  t.same(execs[59]?.params, { version: 29, name: 'back-fill record_evidence_by_hash' });
  t.match(execs[60]?.sql, /^CREATE TABLE IF NOT EXISTS dris_test\.record_evidence_packed\n\(\n {4}key_hash +UInt64 DEFAULT reinterpretAsUInt64\(substring\(SHA256\(.*row +String CODEC\(LZ4\)\n\).*PRIMARY KEY key_hash\nORDER BY \(key_hash, tenant_id, collection, record_id, database, record_version, ingest_id\)\nSETTINGS index_granularity = 16,/s);
  t.same(execs[61]?.params, { version: 30, name: 'create record_evidence_packed' });
  t.match(execs[62]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_packed_from_records TO dris_test\.record_evidence_packed AS\s+SELECT .*row_version AS version, toJSONString\(tuple\(tenant_id, .*, row_version, tuple\(client_id, .*merkle_proof\)\)\) AS row\s+FROM dris_test\.records$/s);
  t.same(execs[63]?.params, { version: 31, name: 'create record_evidence_packed_from_records' });
  t.match(execs[64]?.sql, /CREATE MATERIALIZED VIEW IF NOT EXISTS dris_test\.record_evidence_packed_from_by_hash TO dris_test\.record_evidence_packed AS.*FROM dris_test\.record_evidence_by_hash$/s);
  t.same(execs[65]?.params, { version: 32, name: 'create record_evidence_packed_from_by_hash' });
  t.equal(execs[66]?.sql, 'DROP VIEW IF EXISTS dris_test.record_evidence_by_hash_from_records');
  t.same(execs[67]?.params, { version: 33, name: 'drop record_evidence_by_hash_from_records' });
  t.match(execs[68]?.sql, /^INSERT INTO dris_test\.record_evidence_packed .*FROM dris_test\.record_evidence_by_hash\nSETTINGS max_block_size = 65536, max_insert_block_size = 65536, min_insert_block_size_rows = 65536$/s);
  t.same(execs[69]?.params, { version: 34, name: 'back-fill record_evidence_packed' });
  t.equal(execs.length, 70);
  // Migrations run without the per-query limit (a back-fill takes as long as the table is large).
  const migrationTimeouts = runner.timeouts.filter((_, i) => i >= 2 && i % 2 === 0);
  t.equal(migrationTimeouts.length, 34);
  t.ok(migrationTimeouts.every((ms) => ms !== undefined && ms >= 3_600_000));

  const again = new FakeRunner();
  // A server answers 64-bit integers as strings.
  again.onQuery = () => Array.from({ length: 34 }, (_, i) => ({ version: String(i + 1) }));
  await (await serverStorage(again)).database.migrate();
  t.equal(again.of('exec').length, 2);
});

void t.test('a database name that is not a plain identifier is refused', (t) => {
  t.throws(() => new ClickHouseDatabase(new FakeRunner(), { database: 'dris; DROP TABLE x' }), TypeError);
  t.end();
});

void t.test('insertRecords: one look-up, inserts only missing records, values never in SQL', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const tenant = "t'; DROP TABLE records; --";
  const recs = [record(tenant, BASE_MS + 5), record(tenant, BASE_MS + 1), record('other', BASE_MS + 9)];
  const present = recs[1];
  if (present === undefined) throw new Error('fixture');
  runner.onQuery = () => [{ tenant_id: present.tenantId, ingest_id: present.ingestId }];
  await Promise.all(recs.map((r) => index.records.insertRecords([r])));

  const queries = runner.of('query');
  t.equal(queries.length, 1);
  t.same(queries[0]?.params, {
    tenants: [tenant, 'other'],
    ids: recs.map((r) => r.ingestId),
    fromMs: BASE_MS + 1,
    toMs: BASE_MS + 9,
  });
  const inserts = runner.of('insert');
  t.equal(inserts.length, 1);
  t.equal(inserts[0]?.table, 'dris.records');
  t.same(
    inserts[0]?.rows.map((r) => (r as { ingest_id: string }).ingest_id),
    [recs[0]?.ingestId, recs[2]?.ingestId],
  );
  t.match(inserts[0]?.rows[0], {
    tenant_id: tenant,
    accepted_at: '2025-03-01 10:00:00.005',
    row_version: 1,
    status: 'Ingested',
    snapshot_id: null,
    merkle_proof: [],
    payload: '{"a":1}',
  });
  for (const c of runner.calls) if (c.kind !== 'insert') t.notOk(c.sql.includes(tenant));
  t.same(index.stats(), {
    recordInserts: 1,
    recordRowsInserted: 2,
    recordDuplicatesSkipped: 1,
    recordWrites: 1,
    auditInserts: 0,
    auditRowsInserted: 0,
  });
});

void t.test('records said unseen are not looked for; those coalesced with them still are', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const maybe = record('ten', BASE_MS + 1);
  const unseen = [record('ten', BASE_MS + 2), record('ten', BASE_MS + 3)];
  await Promise.all([index.records.insertRecords([maybe]), index.records.insertRecords(unseen, { unseen: true })]);
  t.same(
    runner.of('query').map((q) => q.params?.['ids']),
    [[maybe.ingestId]],
    'one look-up, of the record not said unseen',
  );
  t.same(
    runner.of('insert').flatMap((i) => i.rows.map((r) => (r as { ingest_id: string }).ingest_id)),
    [maybe.ingestId, ...unseen.map((r) => r.ingestId)],
  );
  await index.records.insertRecords([record('ten', BASE_MS + 4)], { unseen: true });
  t.equal(runner.of('query').length, 1, 'a write of unseen records alone looks nothing up');
  t.equal(runner.of('insert').length, 2);
});

void t.test('existence look-ups are chunked; a write whose rows all exist sends no INSERT', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner, { lookupChunk: 5 });
  const recs = Array.from({ length: 12 }, () => record('ten'));
  runner.onQuery = (_sql, params) => ((params?.['ids'] ?? []) as string[]).map((id) => ({ tenant_id: 'ten', ingest_id: id }));
  await index.records.insertRecords(recs);
  t.same(runner.of('query').map((q) => (q.params?.['ids'] as string[]).length), [5, 5, 2]);
  t.equal(runner.of('insert').length, 0);
});

void t.test('a server index looks up at most SERVER_LOOKUP_CHUNK ids per request', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  await index.records.insertRecords(Array.from({ length: SERVER_LOOKUP_CHUNK * 2 + 500 }, () => record('ten')));
  t.same(runner.of('query').map((q) => (q.params?.['ids'] as string[]).length), [SERVER_LOOKUP_CHUNK, SERVER_LOOKUP_CHUNK, 500]);
});

void t.test('a failed write rejects its callers with the DrisError; later writes proceed', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  runner.onInsert = () => {
    throw new DrisError('dependency_unavailable', 'down');
  };
  const results = await Promise.allSettled([index.records.insertRecords([record('a')]), index.records.insertRecords([record('a')])]);
  t.same(
    results.map((r) => (r.status === 'rejected' ? (r.reason as DrisError).code : 'ok')),
    ['dependency_unavailable', 'dependency_unavailable'],
  );
  runner.onInsert = () => undefined;
  await index.records.insertRecords([record('a')]);
  t.equal(index.stats().recordRowsInserted, 1);
});

void t.test('an unreadable acceptedAt fails only its own call', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const bad = { ...record('a'), acceptedAt: 'yesterday' };
  const [good, broken] = await Promise.allSettled([index.records.insertRecords([record('a')]), index.records.insertRecords([bad])]);
  t.equal(good.status, 'fulfilled');
  t.equal(broken.status === 'rejected' ? (broken.reason as DrisError).code : 'none', 'internal_error');
});

void t.test('queryRecords: parameters, row mapping, cursor', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const row = (i: number, snapshot: string | null): Record<string, unknown> => ({
    ingest_id: `ing-${i}`,
    tenant_id: 'ten',
    client_id: 'app',
    database: 'crm',
    collection: 'c',
    record_id: `r-${i}`,
    record_version: '1',
    operation_type: 'delete',
    source_timestamp: null,
    accepted_at_ms: String(BASE_MS + i),
    payload_hash: 'p',
    record_hash: 'h',
    salt: 's',
    hash_scheme: 'dris-v1',
    status: snapshot === null ? 'Ingested' : 'Anchored',
    snapshot_id: snapshot,
    batch_id: snapshot === null ? null : 'b-1',
    chain_tx_hash: snapshot === null ? null : '0xabc',
  });
  runner.onQuery = () => [row(1, null), row(2, 'snap-1'), row(3, null)];
  const page = await index.records.queryRecords({ tenantId: 'ten', collection: 'c', fromMs: BASE_MS, limit: 2 });
  const q = runner.of('query')[0];
  t.same(q?.params, { tenantId: 'ten', limit: 3, collection: 'c', fromMs: BASE_MS });
  t.match(q?.sql, /FROM dris\.records FINAL/);
  t.match(q?.sql, /collection = \{collection:String\}/);
  t.notMatch(q?.sql, /record_id = /);
  t.same(
    page.items.map((i) => [i.ingestId, i.acceptedAt, i.status, i.snapshotId, i.batchId, i.chainTxHash, i.operationType]),
    [
      ['ing-1', new Date(BASE_MS + 1).toISOString(), 'Ingested', null, null, null, 'delete'],
      ['ing-2', new Date(BASE_MS + 2).toISOString(), 'Anchored', 'snap-1', 'b-1', '0xabc', 'delete'],
    ],
  );
  t.same(page.nextCursor === null ? null : decodeCursor(page.nextCursor), [BASE_MS + 2, 'ing-2']);

  runner.calls.length = 0;
  runner.onQuery = () => [row(3, null)];
  const next = await index.records.queryRecords({ tenantId: 'ten', limit: 5000, cursor: page.nextCursor ?? '' });
  t.same(runner.of('query')[0]?.params, { tenantId: 'ten', limit: 1001, afterMs: BASE_MS + 2, afterId: 'ing-2' });
  t.equal(next.nextCursor, null);

  await t.rejects(index.records.queryRecords({ tenantId: 'ten', limit: 10, cursor: encodeCursor(1, 'x') + 'A' }), {
    code: 'validation_failed',
  });
  await t.rejects(index.records.queryRecords({ tenantId: 'ten', limit: 1.5 }), { code: 'validation_failed' });
  await t.rejects(index.records.queryRecords({ tenantId: 'ten', limit: 1, fromMs: Number.NaN }), { code: 'validation_failed' });
});

void t.test('keys: rows from a server (64-bit integers as strings) map to ApiKeyRecord', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  runner.onQuery = (sql) =>
    sql.includes('count()')
      ? [{ n: '7' }]
      : [
          {
            key_id: 'k1',
            tenant_id: 'ten',
            client_id: 'cli',
            level: 'enterprise',
            secret_hash: 'h',
            created_at_ms: String(BASE_MS),
            expires_at_ms: null,
            revoked_at_ms: String(BASE_MS + 10),
            also_tenants: ['x'],
            rotated_from: null,
          },
        ];
  t.same(await index.keys.getKey('k1'), {
    keyId: 'k1',
    tenantId: 'ten',
    clientId: 'cli',
    level: 'enterprise',
    secretHash: 'h',
    createdAtMs: BASE_MS,
    expiresAtMs: null,
    revokedAtMs: BASE_MS + 10,
    alsoTenants: ['x'],
    rotatedFrom: null,
  });
  t.equal(await index.keys.countKeys(), 7);
  await index.keys.listKeys('ten');
  t.same(runner.of('query').map((q) => q.params), [{ keyId: 'k1' }, undefined, { tenantId: 'ten' }]);

  const key = {
    keyId: 'k2',
    tenantId: 'ten',
    clientId: 'cli',
    level: 'standard' as const,
    secretHash: 'h2',
    createdAtMs: BASE_MS,
    expiresAtMs: null,
    revokedAtMs: null,
    alsoTenants: [],
    rotatedFrom: null,
  };
  await index.keys.putKey(key);
  await index.keys.putKey({ ...key, revokedAtMs: BASE_MS });
  const versions = runner.of('insert').map((i) => (i.rows[0] as { updated_at: string }).updated_at);
  t.equal(versions.length, 2);
  t.ok((versions[0] ?? '') < (versions[1] ?? ''), 'replacement versions strictly increase');
  t.match(versions[0], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$/);
});

void t.test('audit: append coalesced into one insert; query parameters and paging', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const ev = (i: number) => ({
    eventId: `e${i}`,
    atMs: BASE_MS + i,
    tenantId: 'ten',
    clientId: 'c',
    keyId: 'k',
    action: 'record.ingest',
    resource: `record:${i}`,
    outcome: 'success',
    correlationId: 'x',
    ...(i === 0 ? { detail: { n: 1 } } : {}),
  });
  await Promise.all([index.audit.append([ev(0)]), index.audit.append([ev(1), ev(2)])]);
  const inserts = runner.of('insert');
  t.equal(inserts.length, 1);
  t.equal(inserts[0]?.table, 'dris.audit_events');
  t.same(
    inserts[0]?.rows.map((r) => (r as { detail: string }).detail),
    ['{"n":1}', '', ''],
  );

  runner.onQuery = () =>
    [2, 1].map((i) => ({
      event_id: `e${i}`,
      at_ms: BASE_MS + i,
      tenant_id: 'ten',
      client_id: 'c',
      key_id: 'k',
      action: 'record.ingest',
      resource: `record:${i}`,
      outcome: 'success',
      correlation_id: 'x',
      detail: i === 1 ? '{"n":1}' : '',
    }));
  const page = await index.audit.query({ tenantId: 'ten', action: 'record.ingest', keyId: 'k', toMs: BASE_MS + 100, limit: 1 });
  t.same(runner.of('query')[0]?.params, { tenantId: 'ten', limit: 2, action: 'record.ingest', keyId: 'k', toMs: BASE_MS + 100 });
  t.same(page.items, [{ ...ev(2) }]);
  t.same(page.nextCursor === null ? null : decodeCursor(page.nextCursor), [BASE_MS + 2, 'e2']);

  // An action names the one table holding it; no action reads both, verifications as events.
  const sqlOf = async (action?: string): Promise<string> => {
    await index.audit.query({ tenantId: 'ten', limit: 1, ...(action === undefined ? {} : { action }) });
    return runner.of('query').at(-1)?.sql ?? '';
  };
  const events = await sqlOf('record.ingest');
  t.match(events, /FROM dris\.audit_events/);
  t.notMatch(events, /dris\.verifications/);
  const verifications = await sqlOf('verify.snapshot');
  t.match(verifications, /FROM dris\.verifications/);
  t.notMatch(verifications, /dris\.audit_events/);
  const both = await sqlOf();
  t.match(both, /FROM dris\.audit_events[\s\S]*action NOT IN \('verify\.record', 'verify\.snapshot', 'verify\.payload'\)[\s\S]*UNION ALL[\s\S]*FROM dris\.verifications/);
});

void t.test('close flushes waiting rows, closes the runner, and refuses later calls', async (t) => {
  const runner = new FakeRunner();
  const index = await serverStorage(runner);
  const pending = index.records.insertRecords([record('a')]);
  await index.close();
  await pending;
  t.equal(runner.of('insert').length, 1);
  t.ok(runner.closed);
  await t.rejects(index.records.insertRecords([record('a')]), { code: 'dependency_unavailable' });
  await t.rejects(
    index.audit.append([
      { eventId: 'e', atMs: BASE_MS, tenantId: 'a', clientId: '', keyId: '', action: 'x', resource: 'y', outcome: 'success', correlationId: 'c' },
    ]),
    { code: 'dependency_unavailable' },
  );
});

void t.test('GroupCommit: batching, bounds and failures', async (t) => {
  const written: number[][] = [];
  let release: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  const gc = new GroupCommit<number>('test writer', { maxBatchRows: 4, maxDelayMs: 1, maxPendingRows: 6 }, async (rows) => {
    written.push(rows);
    await gate;
    if (rows.includes(-1)) throw new DrisError('internal_error', 'bad row');
  });

  // One write in flight holds the committer; the rows behind it queue up to maxPendingRows.
  gate = new Promise((r) => (release = r));
  const first = gc.submit([1, 2, 3, 4]);
  const second = gc.submit([5, 6]);
  const third = gc.submit([7, 8, 9, 10]);
  await t.rejects(gc.submit([11]), { code: 'overloaded' });
  t.equal(gc.waitingRows, 6);
  release();
  await Promise.all([first, second, third]);
  // A caller's rows are never split: [5,6] and [7..10] exceed maxBatchRows together.
  t.same(written, [[1, 2, 3, 4], [5, 6], [7, 8, 9, 10]]);

  // A submission larger than maxBatchRows (and maxPendingRows) goes alone when nothing waits.
  written.length = 0;
  await gc.submit([1, 2, 3, 4, 5, 6, 7, 8]);
  t.same(written, [[1, 2, 3, 4, 5, 6, 7, 8]]);

  // A failure reaches exactly the callers whose rows were in the failed write.
  written.length = 0;
  const results = await Promise.allSettled([gc.submit([1]), gc.submit([-1]), gc.submit([2, 3, 4]), gc.submit([5])]);
  t.same(written, [[1, -1], [2, 3, 4, 5]]);
  t.same(
    results.map((r) => r.status),
    ['rejected', 'rejected', 'fulfilled', 'fulfilled'],
  );
  t.same(gc.stats, { writes: 6, rows: 24, failedWrites: 1 });

  const late = gc.submit([9]);
  await gc.close();
  await late;
  await t.rejects(gc.submit([1]), { code: 'dependency_unavailable' });
});

void t.test('ClickHouse client errors are translated at the adapter edge', (t) => {
  const net = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' });
  t.equal(translateClickHouseError(net, 'query', true).code, 'dependency_unavailable');
  const wrapped = Object.assign(new Error('fetch failed'), { cause: { code: 'ECONNRESET' } });
  t.equal(translateClickHouseError(wrapped, 'query', true).code, 'dependency_unavailable');
  t.equal(translateClickHouseError(new Error('Timeout error.'), 'query', true).code, 'timeout');
  t.equal(translateClickHouseError(Object.assign(new Error('x'), { code: '159' }), 'query', true).code, 'timeout');
  t.equal(translateClickHouseError(Object.assign(new Error('x'), { code: '516' }), 'query', true).code, 'dependency_unavailable');
  const syntax = Object.assign(new Error('Syntax error'), { code: '62' });
  const translated = translateClickHouseError(syntax, 'query', true);
  t.equal(translated.code, 'internal_error');
  t.equal(translated.cause, syntax);
  const leaky = Object.assign(new Error('Cannot parse input: {"payload":"SECRET"}'), { code: '27' });
  const sanitized = translateClickHouseError(leaky, 'insert', false);
  t.notOk((sanitized.cause as Error).message.includes('SECRET'));
  const already = new DrisError('overloaded', 'busy');
  t.equal(translateClickHouseError(already, 'query', true), already);
  t.end();
});

void t.test('the real client against a port nobody listens on: dependency_unavailable', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
  const { storage: index } = await openClickHouseStorage({ engine: { kind: 'server', url: `http://127.0.0.1:${port}`, requestTimeoutMs: 2000 } });
  await t.rejects(index.database.check(), { code: 'dependency_unavailable' });
  await t.rejects(index.records.insertRecords([record('a')]), { code: 'dependency_unavailable' });
  await index.close();
});

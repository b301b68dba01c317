import type { Test } from 'tap';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { EVIDENCE_KEY_HASH_SQL, evidenceKeyHash } from '../../src/adapters/clickhouse/evidence-key.js';
import { ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import type { SqlRunner } from '../../src/adapters/clickhouse/sql-runner.js';
import type { ClickHouseStorage } from '../../src/adapters/clickhouse/storage.js';
import { decodeMessage, encodeRecords } from '../../src/adapters/queue/record-codec.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { BASE_MS, hex, record, summaryOf } from './index-fixtures.js';
import { indexTrailSuite } from './index-suite-trails.js';

/**
 * The hot index against a real engine, the same checks for every engine it runs on: the embedded
 * chDB (chdb-index.test.ts) and a ClickHouse server through @clickhouse/client
 * (clickhouse-server-index.test.ts).
 */

export interface IndexUnderTest {
  index: ClickHouseStorage;
  /** A runner on the same engine, reading tables directly (without FINAL where a check needs stored rows). */
  raw: SqlRunner;
}

export interface IndexTarget {
  readonly name: string;
  /** Opens the index (not migrated) and a raw runner on a fresh, empty engine. */
  open(): Promise<IndexUnderTest>;
}

/** Registers the suite's subtests on `t`; the returned holder is the current index, for a file's own tests after them. */
export function indexSuite(t: Test, target: IndexTarget): IndexUnderTest {
  const ctx = {} as IndexUnderTest;
  t.before(async () => {
    Object.assign(ctx, await target.open());
  });
  t.teardown(async () => {
    await ctx.raw.close();
    await ctx.index.close();
  });

  async function storedRows(tenantId: string): Promise<number> {
    const rows = await ctx.raw.query<{ n: number | string }>('SELECT count() AS n FROM dris.records WHERE tenant_id = {t:String}', {
      t: tenantId,
    });
    return Number(rows[0]?.n);
  }

  async function allPages(tenantId: string, limit: number, extra: Partial<Parameters<ClickHouseStorage['records']['queryRecords']>[0]> = {}): Promise<string[][]> {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page = await ctx.index.records.queryRecords({ tenantId, limit, ...extra, ...(cursor === null ? {} : { cursor }) });
      pages.push(page.items.map((i) => i.ingestId));
      cursor = page.nextCursor;
    } while (cursor !== null && pages.length < 100);
    return pages;
  }

  t.test('migrate is idempotent and records each version once', async (t) => {
    await ctx.index.database.migrate();
    await ctx.index.database.migrate();
    const versions = await ctx.raw.query<{ version: number | string }>('SELECT version FROM dris.schema_migrations ORDER BY version');
    t.same(versions.map((v) => Number(v.version)), Array.from({ length: 34 }, (_, i) => i + 1));
    const tables = await ctx.raw.query<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = 'dris' ORDER BY name`,
    );
    t.same(tables.map((r) => r.name), [
      'api_keys',
      'audit_events',
      'batch_blocks',
      'batches',
      'record_evidence',
      'record_evidence_by_hash',
      'record_evidence_by_hash_from_evidence',
      'record_evidence_from_lookup',
      'record_evidence_packed',
      'record_evidence_packed_from_by_hash',
      'record_evidence_packed_from_records',
      'record_leaves',
      'record_lookup',
      'records',
      'retrieval_policies',
      'schema_migrations',
      'snapshot_lifecycle',
      'snapshots',
      'verifications',
    ]);
    const engines = await ctx.raw.query<{ name: string; engine: string; sorting_key: string }>(
      `SELECT name, engine, sorting_key FROM system.tables WHERE database = 'dris' AND name IN ('records', 'record_leaves', 'record_lookup', 'record_evidence', 'record_evidence_by_hash', 'record_evidence_packed', 'api_keys', 'audit_events')`,
    );
    t.same(
      Object.fromEntries(engines.map((e) => [e.name, [e.engine, e.sorting_key]])),
      {
        records: ['ReplacingMergeTree', 'tenant_id, accepted_at, ingest_id'],
        record_leaves: ['ReplacingMergeTree', 'tenant_id, ingest_id'],
        record_lookup: ['ReplacingMergeTree', 'tenant_id, collection, record_id, database, record_version, ingest_id'],
        record_evidence: ['ReplacingMergeTree', 'tenant_id, collection, record_id, database, record_version, ingest_id'],
        record_evidence_by_hash: ['ReplacingMergeTree', 'key_hash, tenant_id, collection, record_id, database, record_version, ingest_id'],
        record_evidence_packed: ['ReplacingMergeTree', 'key_hash, tenant_id, collection, record_id, database, record_version, ingest_id'],
        api_keys: ['ReplacingMergeTree', 'key_id'],
        audit_events: ['MergeTree', 'tenant_id, at, event_id'],
      },
    );
    const settings = await ctx.raw.query<{ name: string; create_table_query: string }>(
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
    const [evidence] = await ctx.raw.query<{ create_table_query: string }>(
      `SELECT create_table_query FROM system.tables WHERE database = 'dris' AND name = 'record_evidence'`,
    );
    t.match(evidence?.create_table_query, /merge_selector_base = 5\b/, 'record_evidence merges in the default steps (migration 23)');
    t.notMatch(evidence?.create_table_query, /merge_selector_base = 3\b/);
  });

  t.test("record_evidence_packed: the engine's key hash is the one look-ups name", async (t) => {
    // Keys of every kind a record may carry: a quote, a backslash, text past ASCII, a NUL.
    const keys = [
      { tenantId: 'tenant-h', collection: 'orders', recordId: 'r-1' },
      { tenantId: 'tenant-h', collection: "o'rders", recordId: 'r\\2' },
      { tenantId: 'tenant-h', collection: 'commandes', recordId: 'réf-✓-3' },
      { tenantId: 'tenant-h', collection: 'orders', recordId: 'r\u00004' },
    ];
    const rows = await ctx.raw.query<{ h: string | number }>(
      `SELECT toString(${EVIDENCE_KEY_HASH_SQL}) AS h
       FROM (SELECT arrayJoin(arrayZip(arrayEnumerate({ts:Array(String)}), {ts:Array(String)}, {cs:Array(String)}, {rs:Array(String)})) AS k,
                    k.1 AS i, k.2 AS tenant_id, k.3 AS collection, k.4 AS record_id)
       ORDER BY i`,
      { ts: keys.map((k) => k.tenantId), cs: keys.map((k) => k.collection), rs: keys.map((k) => k.recordId) },
    );
    t.strictSame(
      rows.map((r) => String(r.h)),
      keys.map((k) => evidenceKeyHash(k).toString()),
    );
  });

  t.test('queryValues: each value as it is, JSON text not escaped again', async (t) => {
    const texts = ['["a\\"b","c\\\\d",1,null,["réf-✓"]]', '[]', '{"k":"tab\\tin"}'];
    t.strictSame(await ctx.raw.queryValues('SELECT arrayJoin({vs:Array(String)}) AS v', { vs: texts }), texts);
    t.strictSame(await ctx.raw.queryValues('SELECT toString(number) FROM numbers(0)'), [], 'no rows, no values');
  });

  t.test('insert then query: values, filters, time range, paging', async (t) => {
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
    await ctx.index.records.insertRecords(recs.slice(0, 10));
    await ctx.index.records.insertRecords(recs.slice(10));
    await ctx.index.records.insertRecords([record('tenant-other', { atMs: BASE_MS })]);

    const expected = [...recs].sort((a, b) =>
      a.acceptedAt === b.acceptedAt ? (a.ingestId < b.ingestId ? -1 : 1) : a.acceptedAt < b.acceptedAt ? -1 : 1,
    );

    const all = await ctx.index.records.queryRecords({ tenantId: tenant, limit: 100 });
    t.same(all.items, expected.map(summaryOf));
    t.equal(all.nextCursor, null);

    const pages = await allPages(tenant, 7);
    t.same(pages.map((p) => p.length), [7, 7, 7, 7, 2]);
    t.same(pages.flat(), expected.map((r) => r.ingestId));
    const tiePages = await allPages(tenant, 2, { fromMs: BASE_MS + 30_000 });
    t.same(tiePages.flat(), expected.slice(25).map((r) => r.ingestId));

    const byDb = await ctx.index.records.queryRecords({ tenantId: tenant, database: 'erp', limit: 100 });
    t.same(byDb.items.map((i) => i.ingestId), expected.filter((r) => r.database === 'erp').map((r) => r.ingestId));
    const byDbColl = await ctx.index.records.queryRecords({ tenantId: tenant, database: 'crm', collection: 'orders', limit: 100 });
    t.same(
      byDbColl.items.map((i) => i.ingestId),
      expected.filter((r) => r.database === 'crm' && r.collection === 'orders').map((r) => r.ingestId),
    );
    const target = recs[7];
    if (target === undefined) throw new Error('fixture');
    const byRecord = await ctx.index.records.queryRecords({ tenantId: tenant, recordId: target.recordId, limit: 10 });
    t.same(byRecord.items, [summaryOf(target)]);

    // [from, to): from inclusive, to exclusive.
    const range = await ctx.index.records.queryRecords({ tenantId: tenant, fromMs: BASE_MS + 5000, toMs: BASE_MS + 9000, limit: 100 });
    t.same(range.items.map((i) => i.acceptedAt), [5, 6, 7, 8].map((s) => new Date(BASE_MS + s * 1000).toISOString()));

    t.same((await ctx.index.records.queryRecords({ tenantId: tenant, snapshotId: 'snap-none', limit: 10 })).items, []);
    t.same((await ctx.index.records.queryRecords({ tenantId: 'tenant-nobody', limit: 10 })).items, []);

    await t.rejects(ctx.index.records.queryRecords({ tenantId: tenant, limit: 10, cursor: 'not-a-cursor' }), { code: 'validation_failed' });
    await t.rejects(ctx.index.records.queryRecords({ tenantId: tenant, limit: 0 }), { code: 'validation_failed' });
  });

  t.test('values with quotes, backslashes and newlines are parameters, not SQL', async (t) => {
    const tenant = "tenant-'x";
    const nasty = "a'b\\c\nd\t\u00e9\u{1F600}') OR 1=1 --";
    const r = record(tenant, { recordId: nasty, collection: nasty, database: "db'", payload: JSON.stringify({ q: nasty }) });
    await ctx.index.records.insertRecords([r]);
    const page = await ctx.index.records.queryRecords({ tenantId: tenant, recordId: nasty, collection: nasty, database: "db'", limit: 5 });
    t.same(page.items, [summaryOf(r)]);
    const none = await ctx.index.records.queryRecords({ tenantId: tenant, recordId: "x' OR '1'='1", limit: 5 });
    t.same(none.items, []);
  });

  t.test('payloads are stored byte for byte, from their text or from the bytes a queue message kept', async (t) => {
    const tenant = 'tenant-bytes';
    const texts = ['{}', '{"a":"x\\"y \\\\ \\u0001","b":[1,2.5e+21,"\u00e9\u{1F389}",{"c":null,"d":true}],"e":{},"f":[]}', `{"big":"${'x'.repeat(70_000)}"}`];
    const fromText = texts.map((payload) => record(tenant, { payload }));
    const queued = decodeMessage(encodeRecords(texts.map((payload) => ({ ...record(tenant, { payload }), payloadBytes: Buffer.from(payload, 'utf8') }))));
    t.ok(queued.every((r) => r.payloadBytes !== undefined), 'decoded records carry their payload bytes');
    await ctx.index.records.insertRecords([...fromText, ...queued]);
    const evidence = new ClickHouseEvidenceStore(ctx.index.database);
    for (const r of [...fromText, ...queued]) t.equal(await evidence.payloadOf(tenant, r.ingestId, Date.parse(r.acceptedAt)), r.payload);
  });

  t.test('200 concurrent insertRecords calls are coalesced into few INSERTs', async (t) => {
    const tenant = 'tenant-c';
    const recs = Array.from({ length: 200 }, () => record(tenant));
    const before = ctx.index.stats();
    await Promise.all(recs.map((r) => ctx.index.records.insertRecords([r])));
    const after = ctx.index.stats();
    const inserts = after.recordInserts - before.recordInserts;
    t.ok(inserts >= 1 && inserts <= 5, `INSERT statements: ${inserts}`);
    t.equal(after.recordRowsInserted - before.recordRowsInserted, 200);
    t.equal(await storedRows(tenant), 200);
    const pages = await allPages(tenant, 1000);
    t.same(new Set(pages.flat()), new Set(recs.map((r) => r.ingestId)));
  });

  t.test('a redelivered record never makes a second row', async (t) => {
    const tenant = 'tenant-r';
    const recs = Array.from({ length: 50 }, () => record(tenant));
    await ctx.index.records.insertRecords(recs);
    const before = ctx.index.stats();
    // Sequential redelivery, concurrent redelivery, and duplicates inside one call.
    await ctx.index.records.insertRecords(recs);
    await Promise.all([ctx.index.records.insertRecords(recs.slice(0, 30)), ctx.index.records.insertRecords(recs.slice(20)), ctx.index.records.insertRecords(recs)]);
    await ctx.index.records.insertRecords([...recs.slice(0, 5), ...recs.slice(0, 5)]);
    const after = ctx.index.stats();
    t.equal(after.recordRowsInserted - before.recordRowsInserted, 0);
    t.equal(after.recordDuplicatesSkipped - before.recordDuplicatesSkipped, 50 + 30 + 30 + 50 + 10);
    t.equal(await storedRows(tenant), 50);
    // Mixed: new and already indexed records in one call; only the new ones are written.
    const fresh = Array.from({ length: 3 }, () => record(tenant));
    await ctx.index.records.insertRecords([...recs.slice(0, 10), ...fresh]);
    t.equal(await storedRows(tenant), 53);
    t.equal((await ctx.index.records.queryRecords({ tenantId: tenant, limit: 1000 })).items.length, 53);
  });

  t.test('a pipeline rewrite with a higher row_version replaces the row', async (t) => {
    // What the batch assignment of the pipeline does, as documented in migrations/records.ts.
    const tenant = 'tenant-p';
    const recs = Array.from({ length: 4 }, () => record(tenant));
    await ctx.index.records.insertRecords(recs);
    const ids = recs.slice(0, 3).map((r) => r.ingestId);
    await ctx.raw.exec(
      `INSERT INTO dris.records
       SELECT * REPLACE ({snap:String} AS snapshot_id, {batch:String} AS batch_id,
                         toUInt32(indexOf({ids:Array(String)}, ingest_id) - 1) AS leaf_index,
                         toUInt32(length({ids:Array(String)})) AS tree_size,
                         'PendingAnchor' AS status, toUInt64(2) AS row_version)
       FROM dris.records FINAL
       WHERE tenant_id = {t:String} AND ingest_id IN {ids:Array(String)}`,
      { snap: 'snap-1', batch: 'batch-1', ids, t: tenant },
    );
    const snap = await ctx.index.records.queryRecords({ tenantId: tenant, snapshotId: 'snap-1', limit: 10 });
    t.same(
      snap.items.map((i) => [i.ingestId, i.snapshotId, i.batchId, i.status]),
      ids.map((id) => [id, 'snap-1', 'batch-1', 'PendingAnchor']),
    );
    const all = await ctx.index.records.queryRecords({ tenantId: tenant, limit: 10 });
    t.same(all.items.map((i) => i.status), ['PendingAnchor', 'PendingAnchor', 'PendingAnchor', 'Ingested']);
    // The indexer seeing these records again must not bring the old version back.
    await ctx.index.records.insertRecords(recs);
    await ctx.raw.exec('OPTIMIZE TABLE dris.records FINAL');
    t.equal(await storedRows(tenant), 4);
    const leaf = await ctx.raw.query<{ leaf_index: number | null; row_version: number | string }>(
      'SELECT leaf_index, row_version FROM dris.records WHERE tenant_id = {t:String} ORDER BY accepted_at, ingest_id',
      { t: tenant },
    );
    t.same(leaf.map((r) => [r.leaf_index, Number(r.row_version)]), [[0, 2], [1, 2], [2, 2], [null, 1]]);
  });

  t.test('leaves in record_leaves are joined to the rows; the later version of a leaf wins', async (t) => {
    const tenant = 'tenant-l';
    const recs = Array.from({ length: 4 }, () => record(tenant));
    await ctx.index.records.insertRecords(recs);
    const store = new ClickHousePipelineStore(ctx.index.database);
    const evidence = new ClickHouseEvidenceStore(ctx.index.database);
    const ids = recs.slice(0, 3).map((r) => r.ingestId);
    const leaves = (snapshotId: string, batchId: string, version: number): object[] =>
      ids.map((ingestId, leafIndex) => ({ tenant_id: tenant, ingest_id: ingestId, snapshot_id: snapshotId, batch_id: batchId, leaf_index: leafIndex, tree_size: 3, merkle_proof: [hex(`${batchId}${leafIndex}`, 64)], version }));
    // A write that stopped before its batch row, then the batch its records were formed into instead.
    await ctx.raw.insertJsonEachRow('dris.record_leaves', leaves('snap-orphan', 'batch-orphan', 1));
    await ctx.raw.insertJsonEachRow('dris.record_leaves', leaves('snap-2', 'batch-2', 2));

    const all = await ctx.index.records.queryRecords({ tenantId: tenant, limit: 10 });
    t.same(
      all.items.map((i) => [i.ingestId, i.snapshotId, i.batchId, i.status]),
      [...ids.map((id) => [id, 'snap-2', 'batch-2', 'Batched']), [recs[3]?.ingestId, null, null, 'Ingested']],
    );
    const snap = await ctx.index.records.queryRecords({ tenantId: tenant, snapshotId: 'snap-2', limit: 10 });
    t.same(snap.items, [], 'no snapshot row: the listing by snapshot finds its records through the snapshot');
    await store.putSnapshots(
      [{ snapshotId: 'snap-2', tenantId: tenant, batchId: 'batch-2', status: 'Anchored', recordIds: recs.slice(0, 3).map((r) => r.recordId), ingestIds: ids, recordCount: 3, snapshotHash: hex('h', 64), merkleRoot: hex('m', 64), anchorTimestampMs: BASE_MS, onChainConfirmed: true, chainTxHash: `0x${hex('t', 64)}`, createdAtMs: BASE_MS }],
      [],
    );
    const anchored = await ctx.index.records.queryRecords({ tenantId: tenant, snapshotId: 'snap-2', limit: 10 });
    t.same(anchored.items.map((i) => [i.ingestId, i.status, i.chainTxHash]), ids.map((id) => [id, 'Anchored', `0x${hex('t', 64)}`]));
    t.same((await ctx.index.records.queryRecords({ tenantId: tenant, snapshotId: 'snap-orphan', limit: 10 })).items, []);
    const page = await ctx.index.records.queryRecords({ tenantId: tenant, limit: 2 });
    t.same(page.items.map((i) => i.snapshotId), ['snap-2', 'snap-2'], 'a page joins the leaves of its own rows');

    const found = await evidence.findRecord({ tenantId: tenant, collection: 'customers', recordId: recs[1]?.recordId ?? '' });
    t.same(found.map((r) => [r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [['snap-2', 'batch-2', 1, 3, [hex('batch-21', 64)]]]);
    const byHash = await evidence.findByHash(tenant, 'recordHash', recs[2]?.recordHash ?? '', 10);
    // record_leaves holds no proof: it comes from the record's evidence row.
    t.same(byHash.map((r) => [r.ingestId, r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [[ids[2], 'snap-2', 'batch-2', 2, 3, [hex('batch-22', 64)]]]);
    const unbatched = await evidence.findRecord({ tenantId: tenant, collection: 'customers', recordId: recs[3]?.recordId ?? '' });
    t.same(unbatched.map((r) => [r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [[null, null, null, null, []]]);
    // A leaf without its proof whose evidence row is not of the same batch (a batch write under
    // way): the record reads as in no batch yet, never with a proof that cannot hold.
    await ctx.raw.insertJsonEachRow('dris.record_leaves', [
      { tenant_id: tenant, ingest_id: recs[3]?.ingestId, snapshot_id: 'snap-3', batch_id: 'batch-3', leaf_index: 0, tree_size: 2, merkle_proof: [], version: 1 },
    ]);
    const midWrite = await evidence.findByHash(tenant, 'recordHash', recs[3]?.recordHash ?? '', 10);
    t.same(midWrite.map((r) => [r.ingestId, r.snapshotId, r.batchId, r.leafIndex, r.treeSize, r.merkleProof]), [[recs[3]?.ingestId, null, null, null, null, []]]);
    const trace = await store.traceRecord(tenant, { collection: 'customers', recordId: recs[0]?.recordId ?? '' });
    t.same(trace.map((r) => [r.snapshotId, r.leafIndex, r.merkleProof]), [['snap-2', 0, [hex('batch-20', 64)]]]);
  });

  t.test('rows given as JSON lines are inserted as they are', async (t) => {
    await ctx.raw.exec('CREATE TABLE IF NOT EXISTS dris.scratch_lines (k String, n UInt32) ENGINE = MergeTree ORDER BY k');
    t.teardown(() => ctx.raw.exec('DROP TABLE IF EXISTS dris.scratch_lines'));
    const rows = [{ k: "quote ' and \\ backslash", n: 1 }, { k: 'line\nbreak', n: 2 }, { k: 'plain', n: 3 }];
    await ctx.raw.insertJsonLines('dris.scratch_lines', Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n') + '\n'));
    t.same(await ctx.raw.query('SELECT k, n FROM dris.scratch_lines ORDER BY n'), rows);
    await t.rejects(ctx.raw.insertJsonLines('dris.scratch_lines', Buffer.from('{"k":"x","n":"not a number"}\n')), { code: 'internal_error' });
  });

  t.test('a 10k-record call is stored whole', async (t) => {
    const tenant = 'tenant-big';
    const recs = Array.from({ length: 10_000 }, () => record(tenant));
    const started = process.hrtime.bigint();
    await ctx.index.records.insertRecords(recs);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    t.comment(`10k records in ${ms.toFixed(0)} ms (${Math.round(10_000 / (ms / 1000))} rows/s; informative only)`);
    t.equal(await storedRows(tenant), 10_000);
  });


  indexTrailSuite(t, ctx);
  return ctx;
}

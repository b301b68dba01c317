import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { ChdbSqlRunner } from '../../src/adapters/clickhouse/chdb-runner.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { setLogLevel } from '../../src/util/logger.js';
import { BASE_MS, record } from './index-fixtures.js';
import { indexSuite } from './index-suite.js';

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-chdb-index-'));
const path = join(root, 'clickhouse');
t.teardown(() => {
  rmSync(root, { recursive: true, force: true });
});

// A second runner on the same directory shares the engine (chDB allows that within a process).
const ctx = indexSuite(t, { name: 'chdb', open: async () => ({ index: (await openClickHouseStorage({ engine: { kind: 'embedded', path } })).storage, raw: new ChdbSqlRunner(path, 30_000) }) });

async function storedRows(tenantId: string): Promise<number> {
  const rows = await ctx.raw.query<{ n: number | string }>('SELECT count() AS n FROM dris.records WHERE tenant_id = {t:String}', { t: tenantId });
  return Number(rows[0]?.n);
}

const execFileP = promisify(execFile);

void t.test('a session formats results on its own thread, and large results stay whole', async (t) => {
  const fresh = new ChdbSqlRunner(path, 30_000);
  try {
    // The first statement of a new session already runs with the session's settings.
    const rows = await fresh.query<{ value: string }>("SELECT value FROM system.settings WHERE name = 'output_format_parallel_formatting'");
    t.same(rows, [{ value: '0' }]);
    const many = await fresh.query<{ n: number | string }>('SELECT number AS n FROM system.numbers LIMIT 100000');
    t.equal(many.length, 100000);
    t.equal(Number(many[99999]?.n), 99999);
    t.ok(many.every((r, i) => Number(r.n) === i));
  } finally {
    await fresh.close();
  }
});

void t.test('reader sessions: literals bind as the engine binds, by key, and see every returned write', async (t) => {
  const runner = new ChdbSqlRunner(path, 30_000, 2);
  const writer = new ChdbSqlRunner(path, 30_000, 0);
  try {
    t.equal(runner.parallelQueries, 2);
    t.equal(writer.parallelQueries, 1);
    await writer.exec('CREATE DATABASE IF NOT EXISTS dris');
    await writer.exec('CREATE TABLE IF NOT EXISTS dris.literal_probe (k String, n UInt32) ENGINE = MergeTree ORDER BY k SETTINGS index_granularity = 4');
    const hostile = ["a'b", 'c\\', "\\' OR 1=1 --", 'nul\u0000byte', 'line\nbreak', 'é漢🙂', '{k:String}', ''];
    await writer.insertJsonEachRow('dris.literal_probe', [...hostile.map((k, n) => ({ k, n })), ...Array.from({ length: 2000 }, (_, i) => ({ k: `filler-${i}`, n: 100 + i }))]);
    // Written through one runner and read, at once, on the other's readers: in turn and side by side.
    const sql = 'SELECT k, n FROM dris.literal_probe WHERE k IN {ks:Array(String)} AND n >= {min:UInt32} ORDER BY n';
    const bound = await writer.query<{ k: string; n: number }>(sql, { ks: hostile, min: 0 });
    t.same(bound.map((r) => r.k), hostile, 'the engine binding finds every hostile key');
    const answers = await Promise.all(Array.from({ length: 6 }, () => runner.query<{ k: string; n: number }>(sql, { ks: hostile, min: 0 })));
    for (const a of answers) t.same(a, bound, 'the literals find the same rows');
    t.same(await runner.query(sql, { ks: ["' OR '1'='1"], min: 0 }), [], 'a quote does not widen the match');
    // A look-up by key reads a granule, not the table.
    const plan = await runner.query<{ explain: string }>('EXPLAIN indexes = 1 SELECT n FROM dris.literal_probe WHERE k IN {ks:Array(String)}', { ks: ['filler-7'] });
    t.match(plan.map((r) => r.explain).join('\n'), /Granules: 1\/\d+/);
    // A failed read is reported by code; its cause does not carry the values bound into the text.
    const failed = await runner.query('SELECT no_such_column FROM dris.literal_probe WHERE k = {k:String}', { k: 'value-never-logged' }).catch((err: unknown) => err);
    t.match(failed, { code: 'internal_error' });
    t.notMatch(String((failed as Error).cause), /value-never-logged/);
    await t.rejects(runner.query('SELECT {k:String}', {}), { code: 'internal_error' }, 'a placeholder without a value');
    await writer.exec('DROP TABLE dris.literal_probe');
  } finally {
    await runner.close();
    await writer.close();
  }
});

void t.test('data persists across sessions and processes', async (t) => {
  const tenant = 'tenant-d';
  const recs = Array.from({ length: 20 }, () => record(tenant));
  await ctx.index.records.insertRecords(recs);
  await ctx.index.audit.append([
    { eventId: 'persist-1', atMs: BASE_MS, tenantId: tenant, clientId: 'c', keyId: 'k', action: 'record.ingest', resource: 'r', outcome: 'success', correlationId: 'x' },
  ]);
  await ctx.raw.close();
  await ctx.index.close();
  await t.rejects(ctx.index.records.queryRecords({ tenantId: tenant, limit: 1 }), { code: 'dependency_unavailable' });
  await t.rejects(ctx.index.records.insertRecords([record(tenant)]), { code: 'dependency_unavailable' });

  // A second process may open the directory once this one has let go of it (chDB locks it).
  const moduleUrl = new URL('../../src/adapters/clickhouse/open-storage.js', import.meta.url).href;
  const child = `
    const { openClickHouseStorage } = await import(${JSON.stringify(moduleUrl)});
    const { setLogLevel } = await import(${JSON.stringify(new URL('../../src/util/logger.js', import.meta.url).href)});
    setLogLevel('silent');
    const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: ${JSON.stringify(path)} } });
    await index.database.migrate();
    const page = await index.records.queryRecords({ tenantId: ${JSON.stringify(tenant)}, limit: 1000 });
    const audit = await index.audit.query({ tenantId: ${JSON.stringify(tenant)}, limit: 10 });
    await index.records.insertRecords([${JSON.stringify(record(tenant))}]);
    await index.close();
    process.stdout.write(JSON.stringify({ ids: page.items.map((i) => i.ingestId), events: audit.items.map((e) => e.eventId) }));
  `;
  const projectRoot = fileURLToPath(new URL('../../..', import.meta.url));
  const { stdout } = await execFileP(process.execPath, ['--input-type=module', '-e', child], { cwd: projectRoot });
  const seen = JSON.parse(stdout) as { ids: string[]; events: string[] };
  t.same(seen.ids, recs.map((r) => r.ingestId));
  t.same(seen.events, ['persist-1']);

  // And this process again, after the child closed: it sees what the child wrote.
  ctx.index = (await openClickHouseStorage({ engine: { kind: 'embedded', path } })).storage;
  ctx.raw = new ChdbSqlRunner(path, 30_000);
  await ctx.index.database.migrate();
  t.equal((await ctx.index.records.queryRecords({ tenantId: tenant, limit: 1000 })).items.length, 21);
  t.equal(await storedRows(tenant), 21);
});

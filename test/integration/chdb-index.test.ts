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

import t from 'tap';
import { startClickHouseBridge } from '../harness/clickhouse-bridge-process.js';
import { adminRequest, createKey, eventually, request, startService, type ApiAnswer, type ServiceHandle } from '../harness/service.js';

/**
 * A real `dris serve` whose hot index is a ClickHouse server (CLICKHOUSE_URL, the
 * @clickhouse/client adapter) — the test-only bridge over chDB, as no ClickHouse server installs
 * here — with the embedded queue, chain and IPFS. One tenant's flow end to end over HTTP: single
 * and bulk ingestion with idempotency, listing, anchoring to Anchored, verification and the audit
 * trail; then the service and the bridge restarted under it, and the flow again.
 */

interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
interface RecordItem {
  recordId: string;
  status: string;
  batchId: string | null;
  snapshotId: string | null;
}
interface Snapshot {
  snapshotId: string;
  status: string;
  batchId: string;
  recordCount: number;
}

const users = { dris: 'service-test-secret' };
const bridge = await startClickHouseBridge({ users });
const env = {
  CLICKHOUSE_URL: bridge.url,
  CLICKHOUSE_USER: 'dris',
  CLICKHOUSE_PASSWORD: users.dris,
  DRIS_BATCH_MAX_WAIT_MS: '1500',
  DRIS_RATE_LIMITS: 'standard=1000000',
};
let svc: ServiceHandle = await startService({ env });
t.teardown(async () => {
  await svc.dispose();
  await bridge.stop();
});

const tenant = 'acme';
const key = (await createKey(svc, { tenantId: tenant, clientId: 'app' })).apiKey;
const otherKey = (await createKey(svc, { tenantId: 'globex', clientId: 'app' })).apiKey;
const payloadOf = (id: string): Record<string, unknown> => ({ id, amount: 12.5, note: `record ${id} with 'quotes' and \\ backslash` });
const rec = (id: string): Record<string, unknown> => ({ tenantId: tenant, database: 'erp', collection: 'invoices', recordId: id, recordPayload: payloadOf(id) });

async function listed(query: string, k = key): Promise<RecordItem[]> {
  const items: RecordItem[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const r: ApiAnswer<Page<RecordItem>> = await request<Page<RecordItem>>(svc, 'GET', `/api/v1/records?tenantId=${tenant}&limit=1000${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, { key: k });
    if (r.status !== 200) throw new Error(`records answered ${r.status}: ${r.text}`);
    items.push(...r.body.items);
    cursor = r.body.nextCursor;
    if (cursor === null) break;
  }
  return items;
}

async function allAnchored(count: number): Promise<RecordItem[]> {
  return eventually(
    async () => {
      const items = await listed('');
      return items.length === count && items.every((i) => i.status === 'Anchored') ? items : undefined;
    },
    90_000,
    500,
  );
}

async function verify(body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const r = await request<Record<string, unknown>>(svc, 'POST', '/api/v1/verify/record', { key, body: { tenantId: tenant, database: 'erp', collection: 'invoices', ...body } });
  if (r.status !== 200) throw new Error(`verify answered ${r.status}: ${r.text}`);
  return r.body;
}

t.test('the service reports the ClickHouse server index as healthy', async (t) => {
  const r = await request<{ status: string; dependencies: Record<string, { status: string; adapter: string }> }>(svc, 'GET', '/api/Admin/health');
  t.equal(r.status, 200);
  t.equal(r.body.status, 'ok');
  t.match(r.body.dependencies['index'], { status: 'ok' });
  // The public answer names no adapter; the detailed report on the admin listener does.
  const detailed = await adminRequest<{ dependencies: Record<string, { status: string; adapter: string }> }>(svc, 'GET', '/admin/v1/health');
  t.equal(detailed.status, 200);
  t.match(detailed.body.dependencies['index'], { status: 'ok', adapter: 'clickhouse' });
});

t.test('ingest, list, anchor, verify, audit', async (t) => {
  const single = await request<{ idempotencyReplayed: boolean }>(svc, 'POST', '/api/v1/records', { key, body: rec('single-1'), headers: { 'idempotency-key': 'idem-1' } });
  t.equal(single.status, 202);
  const replay = await request<{ idempotencyReplayed: boolean }>(svc, 'POST', '/api/v1/records', { key, body: rec('single-1'), headers: { 'idempotency-key': 'idem-1' } });
  t.same([replay.status, replay.body.idempotencyReplayed], [202, true]);
  for (const from of [0, 600]) {
    const bulk = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: tenant, records: Array.from({ length: 600 }, (_, i) => rec(`bulk-${from + i}`)) },
    });
    t.same([bulk.status, bulk.body.accepted], [202, 600]);
  }

  const items = await allAnchored(1201);
  t.equal(new Set(items.map((i) => i.recordId)).size, 1201, 'every record once');
  const one = await listed('&recordId=bulk-7');
  t.same(one.map((i) => i.recordId), ['bulk-7']);
  t.equal((await request(svc, 'GET', `/api/v1/records?tenantId=${tenant}`, { key: otherKey })).status, 403, 'another tenant sees nothing');

  const snaps = await request<Page<Snapshot>>(svc, 'GET', `/api/v1/snapshots?tenantId=${tenant}&limit=100`, { key });
  t.equal(snaps.status, 200);
  t.equal(snaps.body.items.reduce((n, s) => n + s.recordCount, 0), 1201, 'the snapshots hold every record');
  t.ok(snaps.body.items.every((s) => s.status === 'Anchored'));
  const batch = await request<{ status: string; batchSeq: number; chainTxHash: string }>(svc, 'GET', `/api/v1/batches/${snaps.body.items[0]?.batchId ?? ''}`, { key });
  t.equal(batch.status, 200);
  t.equal(batch.body.status, 'Anchored');

  t.match(await verify({ recordId: 'bulk-7', payload: payloadOf('bulk-7') }), { verified: true, verificationStatus: 'pass', reasonCategory: 'full_match', anchoredOnChain: true });
  t.match(await verify({ recordId: 'bulk-7', payload: { ...payloadOf('bulk-7'), amount: 12.6 } }), { verified: false, reasonCategory: 'payload_mismatch' });
  t.match(await verify({ recordId: 'nobody' }), { verified: false, reasonCategory: 'not_found' });

  const history = await eventually(async () => {
    const r = await request<Page<{ verificationStatus?: string; outcome?: string }>>(svc, 'GET', `/api/v1/verify/history?tenantId=${tenant}&limit=10`, { key });
    return r.status === 200 && r.body.items.length >= 3 ? r.body.items : undefined;
  }, 20_000);
  t.equal(history.length, 3, 'each verification is in the history once');
  const audit = await request<Page<{ action: string }>>(svc, 'GET', `/api/v1/audit/history?tenantId=${tenant}&limit=100`, { key });
  t.equal(audit.status, 200);
  t.equal(audit.body.items.filter((e) => e.action.startsWith('verify.')).length, 3);
});

t.test('the service and then the bridge restart; the flow goes on', async (t) => {
  await svc.stop();
  svc = await startService({ env, dataDir: svc.dataDir });
  t.equal((await listed('')).length, 1201, 'the index kept everything across the service restart');

  await bridge.restart();
  const r = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', { key, body: { tenantId: tenant, records: Array.from({ length: 50 }, (_, i) => rec(`after-${i}`)) } });
  t.same([r.status, r.body.accepted], [202, 50]);
  await allAnchored(1251);
  t.match(await verify({ recordId: 'after-3', payload: payloadOf('after-3') }), { verified: true, reasonCategory: 'full_match' });
});

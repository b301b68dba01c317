import t, { type Test } from 'tap';
import { adminRequest, createKey, eventually, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * The retrieval policy on every route that returns a record's evidence, on the embedded default:
 * a client the tenant's policy denies evidence of a collection gets no hash, salt or proof of its
 * records from the records listing, the timeline, verify/record, verify/payload or the audit trail
 * (they answer with the evidence withheld), and no receipt (403); a client the policy allows, and
 * the same client for another collection, get everything. Each withholding is audited.
 */

type Json = Record<string, unknown>;

interface Accepted {
  recordId: string;
  recordHash: string;
  payloadHash: string;
  salt: string;
}

const EVIDENCE_OF_SUMMARY = ['recordHash', 'payloadHash', 'salt'];
const EVIDENCE_OF_RESULT = ['recordHash', 'snapshotHash', 'payloadHash', 'merkleProof', 'leafIndex', 'treeSize'];

let svc: ServiceHandle;
let app: string; // denied payroll evidence by the policy
let auditor: string; // allowed everything
const accepted = new Map<string, Accepted>();
const payloadOf = (id: string): Json => ({ id, amount: 100, employee: `e-${id}` });

t.before(async () => {
  svc = await startService({ env: { DRIS_BATCH_MAX_RECORDS: '4', DRIS_BATCH_MAX_WAIT_MS: '200', DRIS_RATE_LIMITS: 'standard=1000000' } });
  app = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  auditor = (await createKey(svc, { tenantId: 'acme', clientId: 'auditor' })).apiKey;
  const records = [
    ['payroll', 'p1'],
    ['payroll', 'p2'],
    ['invoices', 'i1'],
    ['invoices', 'i2'],
  ].map(([collection, recordId]) => ({ database: 'erp', collection, recordId, recordPayload: payloadOf(recordId as string) }));
  const r = await request<{ accepted: number; items: Accepted[] }>(svc, 'POST', '/api/v1/records/bulk', { key: app, body: { tenantId: 'acme', records } });
  if (r.status !== 202 || r.body.accepted !== 4) throw new Error(`ingest failed ${r.status} ${r.text}`);
  for (const item of r.body.items) accepted.set(item.recordId, item);
  await eventually(
    async () => {
      const page = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/records?tenantId=acme', { key: auditor });
      return page.body.items.length === 4 && page.body.items.every((i) => i['status'] === 'Anchored') ? true : undefined;
    },
    90_000,
    250,
  );
  const put = await adminRequest(svc, 'PUT', '/admin/v1/tenants/acme/retrieval-policy', {
    body: { defaultEffect: 'allow', rules: [{ effect: 'deny', collections: ['payroll'], clients: ['app'], scopes: ['evidence'] }] },
  });
  if (put.status !== 200) throw new Error(`policy not set: ${put.status} ${put.text}`);
});
t.teardown(async () => {
  await svc.dispose();
});

const lacks = (t: Test, value: unknown, members: readonly string[], what: string): void => {
  const v = value as Json;
  for (const m of members) t.notOk(m in v, `${what}: no ${m}`);
  t.equal(v['evidenceWithheld'], true, `${what}: marked withheld`);
};
const has = (t: Test, value: unknown, members: readonly string[], what: string): void => {
  const v = value as Json;
  for (const m of members) t.ok(m in v, `${what}: ${m}`);
  t.notOk('evidenceWithheld' in v, `${what}: not withheld`);
};

t.test('GET /api/v1/records', async (t) => {
  const mine = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/records?tenantId=acme', { key: app });
  t.equal(mine.status, 200);
  t.equal(mine.body.items.length, 4, 'every record is still listed');
  for (const item of mine.body.items) {
    const what = `${String(item['collection'])}/${String(item['recordId'])}`;
    if (item['collection'] === 'payroll') lacks(t, item, EVIDENCE_OF_SUMMARY, what);
    else has(t, item, EVIDENCE_OF_SUMMARY, what);
    t.equal(item['status'], 'Anchored', `${what}: status kept`);
    t.match(item['chainTxHash'], /^0x[0-9a-f]{64}$/, `${what}: transaction kept (batch-level, public)`);
  }
  const all = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/records?tenantId=acme', { key: auditor });
  for (const item of all.body.items) has(t, item, EVIDENCE_OF_SUMMARY, `auditor ${String(item['recordId'])}`);
  t.notMatch(mine.text, accepted.get('p1')?.salt ?? 'x', 'the salt of a denied record appears nowhere');
});

t.test('GET /api/v1/timeline/record', async (t) => {
  const denied = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/timeline/record?collection=payroll&recordId=p1', { key: app });
  t.equal(denied.status, 200);
  const item = denied.body.items[0] as Json;
  lacks(t, item, ['recordHash', 'leafIndex', 'treeSize'], 'payroll timeline');
  const events = item['events'] as Json[];
  t.ok(events.every((e) => !('recordHash' in e)), 'no recordHash in the events');
  t.ok(events.some((e) => e['event'] === 'Anchored' && typeof e['batchSeq'] === 'number'), 'the anchoring is still shown');
  t.notMatch(denied.text, accepted.get('p1')?.recordHash ?? 'x');
  const allowed = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/timeline/record?collection=invoices&recordId=i1', { key: app });
  has(t, allowed.body.items[0], ['recordHash', 'leafIndex', 'treeSize'], 'invoices timeline');
  const auditorView = await request<{ items: Json[] }>(svc, 'GET', '/api/v1/timeline/record?collection=payroll&recordId=p1', { key: auditor });
  t.equal((auditorView.body.items[0] as Json)['recordHash'], accepted.get('p1')?.recordHash);
});

t.test('POST /api/v1/verify/record (stored, payload and batch modes)', async (t) => {
  const stored = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: app, body: { collection: 'payroll', recordId: 'p1' } });
  t.equal(stored.status, 200);
  t.match(stored.body, { verified: true, verificationStatus: 'pass' }, 'the verdict is given');
  lacks(t, stored.body, EVIDENCE_OF_RESULT, 'stored mode');
  const withPayload = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: app, body: { collection: 'payroll', recordId: 'p1', payload: payloadOf('p1') } });
  t.match(withPayload.body, { verified: true, reasonCategory: 'full_match', computedPayloadHash: accepted.get('p1')?.payloadHash });
  lacks(t, withPayload.body, EVIDENCE_OF_RESULT, 'payload mode');
  const batchId = (stored.body['batchId'] as string | undefined) ?? '';
  const batchMode = await request<Json>(svc, 'POST', '/api/v1/verify/record', {
    key: app,
    body: { collection: 'payroll', recordId: 'p1', database: 'erp', batchId, salt: accepted.get('p1')?.salt, payload: payloadOf('p1') },
  });
  t.equal(batchMode.status, 200);
  lacks(t, batchMode.body, ['merkleProof', 'leafIndex', 'treeSize', 'recordHash'], 'batch mode');
  const other = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: app, body: { collection: 'invoices', recordId: 'i1' } });
  has(t, other.body, EVIDENCE_OF_RESULT, 'invoices');
  const auditorView = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: auditor, body: { collection: 'payroll', recordId: 'p1' } });
  has(t, auditorView.body, EVIDENCE_OF_RESULT, 'auditor');
  const unknown = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: app, body: { collection: 'payroll', recordId: 'nobody' } });
  t.match(unknown.body, { verificationStatus: 'fail', reasonCategory: 'not_found' });
  t.notOk('evidenceWithheld' in unknown.body, 'nothing to withhold for an unknown record');
});

t.test('POST /api/v1/verify/payload', async (t) => {
  const denied = await request<{ matches: number; results: Json[] }>(svc, 'POST', '/api/v1/verify/payload', { key: app, body: { payloadHash: accepted.get('p2')?.payloadHash } });
  t.equal(denied.status, 200);
  t.equal(denied.body.matches, 1);
  lacks(t, denied.body.results[0], EVIDENCE_OF_RESULT, 'payroll match');
  const allowed = await request<{ results: Json[] }>(svc, 'POST', '/api/v1/verify/payload', { key: app, body: { recordHash: accepted.get('i2')?.recordHash } });
  has(t, allowed.body.results[0], EVIDENCE_OF_RESULT, 'invoices match');
});

t.test('GET /api/v1/receipts/record', async (t) => {
  const denied = await request<{ error: string; details: unknown[] }>(svc, 'GET', '/api/v1/receipts/record?collection=payroll&recordId=p1', { key: app });
  t.equal(denied.status, 403);
  t.equal(denied.body.error, 'forbidden_client');
  t.ok(Array.isArray(denied.body.details));
  t.equal((await request(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=i1', { key: app })).status, 200);
  t.equal((await request(svc, 'GET', '/api/v1/receipts/record?collection=payroll&recordId=p1', { key: auditor })).status, 200);
});

t.test('GET /api/v1/audit/history: the ingest events name no recordHash of a denied record', async (t) => {
  const page = await request<{ items: { resource: string; detail: Json }[] }>(svc, 'GET', '/api/v1/audit/history?action=record.ingest&limit=100', { key: app });
  t.equal(page.status, 200);
  const payroll = page.body.items.filter((e) => e.resource.startsWith('record:payroll/'));
  const invoices = page.body.items.filter((e) => e.resource.startsWith('record:invoices/'));
  t.equal(payroll.length, 2);
  t.equal(invoices.length, 2);
  for (const e of payroll) {
    t.notOk('recordHash' in e.detail, `${e.resource}: no recordHash`);
    t.equal(e.detail['evidenceWithheld'], true);
  }
  for (const e of invoices) t.match(e.detail['recordHash'], /^[0-9a-f]{64}$/, `${e.resource}: recordHash`);
  const auditorView = await request<{ items: { resource: string; detail: Json }[] }>(svc, 'GET', '/api/v1/audit/history?action=record.ingest&limit=100', { key: auditor });
  t.ok(auditorView.body.items.every((e) => typeof e.detail['recordHash'] === 'string'));
});

t.test('retrieval-controls agrees, and every withholding is an audit entry', async (t) => {
  const check = await request<{ decisions: { decision: string; reason: string }[] }>(svc, 'POST', '/api/v1/evidence/retrieval-controls', {
    key: app,
    body: { records: [{ collection: 'payroll', recordId: 'p1' }, { collection: 'invoices', recordId: 'i1' }] },
  });
  t.match(check.body.decisions, [
    { decision: 'denied', reason: 'rule_deny' },
    { decision: 'allowed', reason: 'default_allow' },
  ]);
  const access = await request<{ items: { outcome: string; actor: { clientId: string }; detail: Json }[] }>(svc, 'GET', '/api/v1/audit/history?action=evidence.access&limit=1000', { key: auditor });
  const vias = new Set(access.body.items.filter((e) => e.outcome === 'denied' && e.actor.clientId === 'app').map((e) => e.detail['via']));
  for (const via of ['records', 'timeline/record', 'verify/record', 'verify/payload', 'audit/history']) t.ok(vias.has(via), `audited: ${via}`);
});

/**
 * A tenant's whole flow through a TypeScript client generated from docs/openapi.json by
 * @hey-api/openapi-ts (fetch client, zod validators of requests and responses). The test
 * test/integration/generated-client.test.ts generates the client next to this file, compiles both
 * with `tsc --strict` and runs this program against a real service; every answer of the service
 * must pass the generated response validators.
 *
 * Input: DRIS_URL, DRIS_ADMIN_URL, DRIS_ADMIN_TOKEN. Output: one JSON line
 * `{ steps: string[], failures: string[] }`; the exit code is 1 when anything failed.
 */
import { createClient, createConfig } from './client/client/index.js';
import * as api from './client/sdk.gen.js';

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is not set`);
  return v;
};

const steps: string[] = [];
const failures: string[] = [];
const check = (ok: boolean, what: string): void => {
  if (ok) steps.push(what);
  else failures.push(what);
};

const admin = createClient(createConfig({ baseUrl: env('DRIS_ADMIN_URL'), auth: env('DRIS_ADMIN_TOKEN'), throwOnError: true }));
const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
const tenantId = `flow-${run}`;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The answer's data: an error answer (or a body its validator refuses) throws. */
async function need<R extends { data?: unknown; error?: unknown; response: Response }>(p: Promise<R>): Promise<Exclude<R['data'], undefined>> {
  const r = await p;
  if (r.data === undefined) throw new Error(`${r.response.status}: ${JSON.stringify(r.error)}`);
  return r.data as Exclude<R['data'], undefined>;
}

async function main(): Promise<void> {
  // ---- operators: a key for a new tenant, the detailed health report --------------------------
  const created = await need(api.createApiKey({ client: admin, body: { tenantId, clientId: 'app', level: 'standard' } }));
  check(created.key.tenantId === tenantId && created.apiKey.length > 20, 'CreateApiKey');
  const listed = await need(api.listApiKeys({ client: admin, query: { tenantId } }));
  check(listed.items.some((k) => k.keyId === created.key.keyId), 'ListApiKeys');
  const detail = await api.getHealthDetail({ client: admin, throwOnError: false });
  check(detail.response.status === 200 || detail.response.status === 503, 'GetHealthDetail');
  const tenant = createClient(createConfig({ baseUrl: env('DRIS_URL'), auth: created.apiKey, throwOnError: true }));
  const health = await api.getHealth({ client: tenant, throwOnError: false });
  check(health.response.status === 200 || health.response.status === 503, 'GetHealth');

  // ---- ingestion: one record (twice under one key), then both bulk forms ------------------------
  const record = { tenantId, database: 'erp', collection: 'invoices', recordId: 'INV-1', recordVersion: '1', operationType: 'insert' as const, recordPayload: { amount: 1200, currency: 'EUR', lines: [{ sku: 'A', qty: 2 }] } };
  const first = await need(api.ingestRecord({ client: tenant, body: record, headers: { 'Idempotency-Key': `k-${run}` } }));
  const again = await need(api.ingestRecord({ client: tenant, body: record, headers: { 'Idempotency-Key': `k-${run}` } }));
  check(first.tenantId === tenantId && again.idempotencyReplayed && again.ingestId === first.ingestId, 'IngestRecord (and its idempotent retry)');
  const bulkA = await need(api.bulkIngestRecords({ client: tenant, body: { tenantId, records: [{ database: 'erp', collection: 'invoices', recordId: 'INV-2', recordPayload: { amount: 80 } }, { database: 'erp', collection: 'invoices', recordId: 'INV-3', recordPayload: { amount: 5 } }] } }));
  check(bulkA.accepted === 2 && bulkA.rejected.length === 0, 'BulkIngestRecords, form A');
  const bulkB = await need(api.bulkIngestRecords({ client: tenant, body: { items: [{ tenantId, database: 'crm', collection: 'contacts', recordId: 'C-1', recordPayload: { name: 'Ada' } }] } }));
  check(bulkB.accepted === 1, 'BulkIngestRecords, form B');
  // ---- indexing and anchoring: the records listed, then every one Anchored ------------------------
  const deadline = Date.now() + 90_000;
  const listing = async (): Promise<{ status: string; collection: string; tenantId: string }[]> => (await need(api.queryRecords({ client: tenant, query: { tenantId, limit: 100 } }))).items;
  let records = await listing();
  while ((records.length < 4 || records.some((r) => r.status !== 'Anchored')) && Date.now() < deadline) {
    await sleep(250);
    records = await listing();
  }
  const invoices = await need(api.queryRecords({ client: tenant, query: { tenantId, collection: 'invoices', from: new Date(Date.now() - 3_600_000).toISOString(), limit: 10 } }));
  check(invoices.items.length === 3 && invoices.items.every((i) => i.tenantId === tenantId), 'QueryRecords');
  check(records.length === 4 && records.every((r) => r.status === 'Anchored'), 'QueryRecords: every record Anchored');
  const snapshots = (await need(api.listSnapshots({ client: tenant, query: { limit: 100 } }))).items;
  check(snapshots.length >= 1 && snapshots.every((s) => s.status === 'Anchored'), 'ListSnapshots: every snapshot Anchored');
  const anchored = await need(api.listSnapshots({ client: tenant, query: { status: 'Anchored', limit: 1 } }));
  check(anchored.items.length === 1, 'ListSnapshots by status');
  const own = (snapshots.find((x) => x.recordIds.includes(first.recordId)) ?? snapshots[0])?.snapshotId ?? '';
  await verifications(tenant, first, own);
  await statusReads(tenant, first.recordId, own);
  await auditAndControls(tenant);

  // ---- operators again: the tenant's policy, then the key rotated and revoked -------------------
  const policy = await need(api.putRetrievalPolicy({ client: admin, path: { tenantId }, body: { defaultEffect: 'allow', rules: [{ effect: 'deny', clients: ['nobody'] }] } }));
  check(!policy.isDefault && policy.policy.rules.length === 1, 'PutRetrievalPolicy');
  check((await need(api.getRetrievalPolicy({ client: admin, path: { tenantId } }))).tenantId === tenantId, 'GetRetrievalPolicy');
  const rotated = await need(api.rotateApiKey({ client: admin, path: { keyId: created.key.keyId }, body: { graceSeconds: 0 } }));
  check(rotated.key.rotatedFrom === created.key.keyId, 'RotateApiKey');
  const revoked = await need(api.revokeApiKey({ client: admin, path: { keyId: rotated.key.keyId } }));
  check(revoked.revokedAtMs !== null, 'RevokeApiKey (no body)');
}

type Client = ReturnType<typeof createClient>;
type Ingested = { recordId: string; recordHash: string; payloadHash: string; salt: string };

/** Every verification mode: stored, payload, batchId, by hash (both kinds), snapshot. */
async function verifications(tenant: Client, first: Ingested, snapshotId: string): Promise<void> {
  const stored = await need(api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId } }));
  check(stored.verified && stored.mode === 'stored', 'VerifyRecord, stored');
  const payload = { amount: 1200, currency: 'EUR', lines: [{ sku: 'A', qty: 2 }] };
  const withPayload = await need(api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId, payload } }));
  check(withPayload.verified && withPayload.mode === 'payload', 'VerifyRecord, with the payload');
  const batchId = stored.batchId ?? '';
  const inBatch = await need(api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId, database: 'erp', batchId, salt: first.salt, payloadHash: first.payloadHash, operationType: 'insert' } }));
  check(inBatch.verified && inBatch.mode === 'batch', 'VerifyRecord, batchId mode');
  const byPayload = await need(api.verifyPayload({ client: tenant, body: { payloadHash: first.payloadHash } }));
  check(byPayload.anchored && byPayload.hashType === 'payloadHash', 'VerifyPayload, payloadHash');
  const byRecord = await need(api.verifyPayload({ client: tenant, body: { recordHash: first.recordHash } }));
  check(byRecord.anchored && byRecord.matches === 1, 'VerifyPayload, recordHash');
  const snap = await need(api.verifySnapshot({ client: tenant, path: { snapshotId } }));
  check(snap.verified && snap.anchoredOnChain, 'VerifySnapshot');
  const history = await need(api.getVerificationHistory({ client: tenant, query: { outcome: 'pass', limit: 50 } }));
  check(history.items.length >= 6, 'GetVerificationHistory');
}

/** Snapshot, lifecycle, batch, timeline, receipt, manifest, retry. */
async function statusReads(tenant: Client, recordId: string, snapshotId: string): Promise<void> {
  const snapshot = await need(api.getSnapshot({ client: tenant, path: { snapshotId } }));
  check(snapshot.snapshotId === snapshotId && snapshot.status === 'Anchored', 'GetSnapshot');
  const lifecycle = await need(api.getSnapshotLifecycle({ client: tenant, path: { snapshotId } }));
  check(lifecycle.items.map((e) => e.state).join(',') === 'Ingested,PendingAnchor,Batched,Anchored', 'GetSnapshotLifecycle');
  const batch = await need(api.getBatch({ client: tenant, path: { batchId: snapshot.batchId } }));
  check(batch.status === 'Anchored' && batch.snapshotIds.includes(snapshotId), 'GetBatch');
  const timeline = await need(api.getRecordTimeline({ client: tenant, query: { collection: 'invoices', recordId } }));
  check(timeline.items[0]?.events.some((e) => e.event === 'Anchored') === true, 'GetRecordTimeline');
  const receipt = await api.getRecordReceipt({ client: tenant, query: { collection: 'invoices', recordId, includePayload: true } });
  const bundle = await need(Promise.resolve(receipt));
  check(bundle.merkleRoot === batch.merkleRoot && bundle.payload !== undefined && /attachment/.test(receipt.response.headers.get('content-disposition') ?? ''), 'GetRecordReceipt');
  if (batch.ipfsCid !== null) {
    const manifest = await api.getIpfsContent({ client: tenant, path: { cid: batch.ipfsCid } });
    check(manifest.response.status === 200, 'GetIpfsContent');
  }
  // Nothing here failed, so the documented refusal: a snapshot that is not Failed is not retried.
  const retry = await api.retrySnapshot({ client: tenant, path: { snapshotId }, throwOnError: false });
  check(retry.response.status === 409 && retry.error?.error === 'invalid_state' && retry.error.status === 'Anchored', 'RetrySnapshot (no body): 409 for an Anchored snapshot');
}

async function auditAndControls(tenant: Client): Promise<void> {
  const controls = await need(api.checkRetrievalControls({ client: tenant, body: { scope: 'payload', purpose: 'flow', records: [{ collection: 'invoices', recordId: 'INV-1' }, { collection: 'invoices', recordId: 'nope' }] } }));
  check(controls.allowed === 1 && controls.denied === 1, 'CheckRetrievalControls');
  const ingests = await need(api.getAuditHistory({ client: tenant, query: { action: 'record.ingest', limit: 100 } }));
  check(ingests.items.length >= 4, 'GetAuditHistory, record.ingest');
  const access = await need(api.getAuditHistory({ client: tenant, query: { action: 'evidence.access', from: new Date(Date.now() - 3_600_000).toISOString() } }));
  check(access.items.length >= 2, 'GetAuditHistory, evidence.access since an hour ago');
  const bad = await api.queryRecords({ client: tenant, query: { tenantId: 'someone-else' }, throwOnError: false });
  check(bad.response.status === 403 && bad.error?.error === 'forbidden_tenant', 'QueryRecords, another tenant: 403');
}

main().then(
  () => {
    console.log(JSON.stringify({ steps, failures }));
    process.exitCode = failures.length === 0 ? 0 : 1;
  },
  (err: unknown) => {
    failures.push(`threw: ${err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : JSON.stringify(err)}`);
    console.log(JSON.stringify({ steps, failures }));
    process.exitCode = 1;
  },
);

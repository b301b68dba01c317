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

async function main(): Promise<void> {
  // ---- operators: a key for a new tenant, the detailed health report --------------------------
  const created = (await api.createApiKey({ client: admin, body: { tenantId, clientId: 'app', level: 'standard' } })).data;
  check(created.key.tenantId === tenantId && created.apiKey.length > 20, 'CreateApiKey');
  const listed = (await api.listApiKeys({ client: admin, query: { tenantId } })).data;
  check(listed.items.some((k) => k.keyId === created.key.keyId), 'ListApiKeys');
  const detail = await api.getHealthDetail({ client: admin, throwOnError: false });
  check(detail.response.status === 200 || detail.response.status === 503, 'GetHealthDetail');
  const tenant = createClient(createConfig({ baseUrl: env('DRIS_URL'), auth: created.apiKey, throwOnError: true }));
  const health = await api.getHealth({ client: tenant, throwOnError: false });
  check(health.response.status === 200 || health.response.status === 503, 'GetHealth');

  // ---- ingestion: one record (twice under one key), then both bulk forms ------------------------
  const record = { tenantId, database: 'erp', collection: 'invoices', recordId: 'INV-1', recordVersion: '1', operationType: 'insert' as const, recordPayload: { amount: 1200, currency: 'EUR', lines: [{ sku: 'A', qty: 2 }] } };
  const first = (await api.ingestRecord({ client: tenant, body: record, headers: { 'Idempotency-Key': `k-${run}` } })).data;
  const again = (await api.ingestRecord({ client: tenant, body: record, headers: { 'Idempotency-Key': `k-${run}` } })).data;
  check(first.tenantId === tenantId && again.idempotencyReplayed && again.ingestId === first.ingestId, 'IngestRecord (and its idempotent retry)');
  const bulkA = (await api.bulkIngestRecords({ client: tenant, body: { tenantId, records: [{ database: 'erp', collection: 'invoices', recordId: 'INV-2', recordPayload: { amount: 80 } }, { database: 'erp', collection: 'invoices', recordId: 'INV-3', recordPayload: { amount: 5 } }] } })).data;
  check(bulkA.accepted === 2 && bulkA.rejected.length === 0, 'BulkIngestRecords, form A');
  const bulkB = (await api.bulkIngestRecords({ client: tenant, body: { items: [{ tenantId, database: 'crm', collection: 'contacts', recordId: 'C-1', recordPayload: { name: 'Ada' } }] } })).data;
  check(bulkB.accepted === 1, 'BulkIngestRecords, form B');
  const page = (await api.queryRecords({ client: tenant, query: { tenantId, collection: 'invoices', limit: 10 } })).data;
  check(page.items.length === 3 && page.items.every((i) => i.tenantId === tenantId), 'QueryRecords');

  // ---- anchoring ----------------------------------------------------------------------------------
  const deadline = Date.now() + 90_000;
  let snapshots = (await api.listSnapshots({ client: tenant, query: { limit: 100 } })).data.items;
  while ((snapshots.length < 3 || snapshots.some((s) => s.status !== 'Anchored')) && Date.now() < deadline) {
    await sleep(250);
    snapshots = (await api.listSnapshots({ client: tenant, query: { limit: 100 } })).data.items;
  }
  check(snapshots.length >= 3 && snapshots.every((s) => s.status === 'Anchored'), 'ListSnapshots: every snapshot Anchored');
  const anchored = (await api.listSnapshots({ client: tenant, query: { status: 'Anchored', limit: 1 } })).data;
  check(anchored.items.length === 1, 'ListSnapshots by status');
  await verifications(tenant, first, snapshots[0]?.snapshotId ?? '');
  await statusReads(tenant, first.recordId, snapshots[0]?.snapshotId ?? '');
  await auditAndControls(tenant);

  // ---- operators again: the tenant's policy, then the key rotated and revoked -------------------
  const policy = (await api.putRetrievalPolicy({ client: admin, path: { tenantId }, body: { defaultEffect: 'allow', rules: [{ effect: 'deny', clients: ['nobody'] }] } })).data;
  check(!policy.isDefault && policy.policy.rules.length === 1, 'PutRetrievalPolicy');
  check((await api.getRetrievalPolicy({ client: admin, path: { tenantId } })).data.tenantId === tenantId, 'GetRetrievalPolicy');
  const rotated = (await api.rotateApiKey({ client: admin, path: { keyId: created.key.keyId }, body: { graceSeconds: 0 } })).data;
  check(rotated.key.rotatedFrom === created.key.keyId, 'RotateApiKey');
  const revoked = (await api.revokeApiKey({ client: admin, path: { keyId: rotated.key.keyId } })).data;
  check(revoked.revokedAtMs !== null, 'RevokeApiKey (no body)');
}

type Client = ReturnType<typeof createClient>;
type Ingested = { recordId: string; recordHash: string; payloadHash: string; salt: string };

/** Every verification mode: stored, payload, batchId, by hash (both kinds), snapshot. */
async function verifications(tenant: Client, first: Ingested, snapshotId: string): Promise<void> {
  const stored = (await api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId } })).data;
  check(stored.verified && stored.mode === 'stored', 'VerifyRecord, stored');
  const payload = { amount: 1200, currency: 'EUR', lines: [{ sku: 'A', qty: 2 }] };
  const withPayload = (await api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId, payload } })).data;
  check(withPayload.verified && withPayload.mode === 'payload', 'VerifyRecord, with the payload');
  const batchId = stored.batchId ?? '';
  const inBatch = (await api.verifyRecord({ client: tenant, body: { collection: 'invoices', recordId: first.recordId, database: 'erp', batchId, salt: first.salt, payloadHash: first.payloadHash, operationType: 'insert' } })).data;
  check(inBatch.verified && inBatch.mode === 'batch', 'VerifyRecord, batchId mode');
  const byPayload = (await api.verifyPayload({ client: tenant, body: { payloadHash: first.payloadHash } })).data;
  check(byPayload.anchored && byPayload.hashType === 'payloadHash', 'VerifyPayload, payloadHash');
  const byRecord = (await api.verifyPayload({ client: tenant, body: { recordHash: first.recordHash } })).data;
  check(byRecord.anchored && byRecord.matches === 1, 'VerifyPayload, recordHash');
  const snap = (await api.verifySnapshot({ client: tenant, path: { snapshotId } })).data;
  check(snap.verified && snap.anchoredOnChain, 'VerifySnapshot');
  const history = (await api.getVerificationHistory({ client: tenant, query: { outcome: 'pass', limit: 50 } })).data;
  check(history.items.length >= 6, 'GetVerificationHistory');
}

/** Snapshot, lifecycle, batch, timeline, receipt, manifest, retry. */
async function statusReads(tenant: Client, recordId: string, snapshotId: string): Promise<void> {
  const snapshot = (await api.getSnapshot({ client: tenant, path: { snapshotId } })).data;
  check(snapshot.snapshotId === snapshotId && snapshot.status === 'Anchored', 'GetSnapshot');
  const lifecycle = (await api.getSnapshotLifecycle({ client: tenant, path: { snapshotId } })).data;
  check(lifecycle.items.map((e) => e.state).join(',') === 'Ingested,PendingAnchor,Batched,Anchored', 'GetSnapshotLifecycle');
  const batch = (await api.getBatch({ client: tenant, path: { batchId: snapshot.batchId } })).data;
  check(batch.status === 'Anchored' && batch.snapshotIds.includes(snapshotId), 'GetBatch');
  const timeline = (await api.getRecordTimeline({ client: tenant, query: { collection: 'invoices', recordId } })).data;
  check(timeline.items[0]?.events.some((e) => e.event === 'Anchored') === true, 'GetRecordTimeline');
  const receipt = await api.getRecordReceipt({ client: tenant, query: { collection: 'invoices', recordId, includePayload: true } });
  check(receipt.data.merkleRoot === batch.merkleRoot && receipt.data.payload !== undefined && /attachment/.test(receipt.response.headers.get('content-disposition') ?? ''), 'GetRecordReceipt');
  if (batch.ipfsCid !== null) {
    const manifest = await api.getIpfsContent({ client: tenant, path: { cid: batch.ipfsCid } });
    check(manifest.response.status === 200, 'GetIpfsContent');
  }
  // Nothing here failed, so the documented refusal: a snapshot that is not Failed is not retried.
  const retry = await api.retrySnapshot({ client: tenant, path: { snapshotId }, throwOnError: false });
  check(retry.response.status === 409 && retry.error?.error === 'invalid_state' && retry.error.status === 'Anchored', 'RetrySnapshot (no body): 409 for an Anchored snapshot');
}

async function auditAndControls(tenant: Client): Promise<void> {
  const controls = (await api.checkRetrievalControls({ client: tenant, body: { scope: 'payload', purpose: 'flow', records: [{ collection: 'invoices', recordId: 'INV-1' }, { collection: 'invoices', recordId: 'nope' }] } })).data;
  check(controls.allowed === 1 && controls.denied === 1, 'CheckRetrievalControls');
  const ingests = (await api.getAuditHistory({ client: tenant, query: { action: 'record.ingest', limit: 100 } })).data;
  check(ingests.items.length >= 4, 'GetAuditHistory, record.ingest');
  const access = (await api.getAuditHistory({ client: tenant, query: { action: 'evidence.access', from: new Date(Date.now() - 3_600_000).toISOString() } })).data;
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

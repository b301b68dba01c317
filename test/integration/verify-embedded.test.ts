import { execFileSync } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { Contract, JsonRpcProvider, Wallet } from 'ethers';
import t from 'tap';
import { ChdbSqlRunner } from '../../src/adapters/clickhouse/chdb-runner.js';
import { ANVIL_DEV_ANCHORER_KEY } from '../../src/adapters/chain/anvil-node.js';
import { REASON_STATUS, VERIFICATION_STATUSES } from '../../src/domain/verification/types.js';
import { adminRequest, eventually, repoRoot, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * Verification through the HTTP API on the embedded default, reaching every verificationStatus
 * and every reasonCategory with real evidence: intact records, a changed payload, unknown records
 * and versions, pending records, tampered index rows (changed offline in the real engine), a
 * manifest that does not match, an unreadable manifest, a root missing on-chain, another root at
 * the batch's sequence, an unreachable chain, and verification from IPFS and the chain alone after
 * the hot index is deleted.
 */

interface Result {
  verified: boolean;
  verificationStatus: string;
  reasonCategory: string;
  verificationId: string;
  recordHash?: string;
  merkleProof?: string[];
  leafIndex?: number;
  treeSize?: number;
  batchId?: string;
  batchSeq?: number;
  merkleRoot?: string;
  anchoredOnChain?: boolean;
  onChainMerkleRoot?: string;
  chainId?: number;
  contractAddress?: string;
  computedPayloadHash?: string;
  snapshotId?: string;
  ipfsEvidence?: { ipfsCid: string; ipfsGatewayUrl?: string; hashMatchesIpfs: boolean; merkleRootMatchesChain: boolean; fetched: boolean };
  onChainProof?: { explorerContractUrl?: string; explorerEventUrl?: string };
}

interface Accepted {
  recordId: string;
  recordHash: string;
  payloadHash: string;
  salt: string;
}

const reached = new Map<string, string>();
let svc: ServiceHandle;
let key: string;
let dataDir: string;

const env = {
  DRIS_BATCH_MAX_RECORDS: '4',
  DRIS_BATCH_MAX_WAIT_MS: '60000',
  DRIS_VERIFY_CHAIN_CACHE_MS: '0',
  DRIS_RATE_LIMITS: 'standard=1000000',
  DRIS_EXPLORER_ADDRESS_URL: 'https://explorer.example/address/{address}',
  DRIS_EXPLORER_TX_URL: 'https://explorer.example/tx/{tx}',
};

const payloadOf = (id: string): Record<string, unknown> => ({ id, amount: 12.5, note: `record ${id}` });
const accepted = new Map<string, Accepted>();

async function ingest(ids: readonly string[]): Promise<void> {
  const r = await request<{ accepted: number; items: (Accepted & { index: number })[] }>(svc, 'POST', '/api/v1/records/bulk', {
    key,
    body: { tenantId: 'default', records: ids.map((id) => ({ database: 'erp', collection: 'invoices', recordId: id, recordPayload: payloadOf(id) })) },
  });
  if (r.status !== 202 || r.body.accepted !== ids.length) throw new Error(`ingest failed: ${r.status} ${r.text}`);
  for (const item of r.body.items) accepted.set(item.recordId, item);
}

async function verify(body: Record<string, unknown>): Promise<Result> {
  const r = await request<Result>(svc, 'POST', '/api/v1/verify/record', { key, body });
  if (r.status !== 200) throw new Error(`verify answered ${r.status}: ${r.text}`);
  reached.set(r.body.reasonCategory, r.body.verificationStatus);
  return r.body;
}

async function batchOf(recordId: string): Promise<string> {
  return eventually(async () => {
    const r = await request<{ items: { status: string; batchId: string | null }[] }>(svc, 'GET', `/api/v1/records?tenantId=default&recordId=${recordId}`, { key });
    const item = r.body.items[0];
    return item?.status === 'Anchored' && item.batchId !== null ? item.batchId : undefined;
  }, 60_000);
}

async function restart(): Promise<void> {
  await svc.stop();
  svc = await startService({ dataDir, env });
  key = svc.bootstrapKey;
}

async function rpcUrl(): Promise<string> {
  const h = await adminRequest<{ chain?: { rpcUrl: string } }>(svc, 'GET', '/admin/v1/health');
  const url = h.body.chain?.rpcUrl;
  if (url === undefined) throw new Error('health reports no chain');
  return url;
}

/** Rewrites rows of the stopped service's hot index in the real engine, as a tamperer with disk access would. */
async function tamper(statements: readonly string[]): Promise<void> {
  const runner = new ChdbSqlRunner(path.join(dataDir, 'clickhouse'), 30_000);
  try {
    for (const s of statements) await runner.exec(s);
  } finally {
    await runner.close();
  }
}

/** A statement writing record `recordId`'s evidence row again, at a higher version, its evidence `evidence` (SQL over e[9]). */
function tamperedRow(recordId: string, evidence: string): string {
  return `INSERT INTO dris.record_evidence_packed
    WITH JSONExtractArrayRaw(row) AS e
    SELECT * REPLACE (concat('[', arrayStringConcat(arraySlice(e, 1, 7), ','), ',', toString(version + 100), ',', ${evidence}, ']') AS row, version + 100 AS version)
    FROM dris.record_evidence_packed FINAL WHERE record_id = '${recordId}'`;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

t.before(async () => {
  svc = await startService({ env });
  key = svc.bootstrapKey;
  dataDir = svc.dataDir;
});
t.teardown(() => svc.dispose());

let batch1 = '';
let batch2 = '';

t.test('intact, changed, unknown and pending records', async (t) => {
  await ingest(['a', 'b', 'c', 'e']);
  await ingest(['d', 'f', 'g', 'h']);
  batch1 = await batchOf('e');
  batch2 = await batchOf('h');
  t.not(batch1, batch2);

  const stored = await verify({ collection: 'invoices', recordId: 'e' });
  t.match(stored, { verified: true, verificationStatus: 'pass', reasonCategory: 'verified_anchored', anchoredOnChain: true, treeSize: 4, batchId: batch1 });
  t.equal(stored.recordHash, accepted.get('e')?.recordHash);
  t.equal(stored.onChainMerkleRoot, stored.merkleRoot, 'the root read from the chain is the batch root');
  t.equal(stored.merkleProof?.length, 2, 'a 4-leaf tree has 2-element audit paths');
  t.match(stored.ipfsEvidence, { hashMatchesIpfs: true, merkleRootMatchesChain: true, fetched: true });
  t.ok(stored.ipfsEvidence?.ipfsGatewayUrl?.endsWith(`/ipfs/${stored.ipfsEvidence.ipfsCid}`));
  t.equal(stored.onChainProof?.explorerContractUrl, `https://explorer.example/address/${stored.contractAddress ?? ''}`);
  t.match(stored.onChainProof?.explorerEventUrl, /^https:\/\/explorer\.example\/tx\/0x[0-9a-f]{64}$/);

  const full = await verify({ tenantId: 'default', database: 'erp', collection: 'invoices', recordId: 'e', payload: payloadOf('e') });
  t.match(full, { verified: true, verificationStatus: 'pass', reasonCategory: 'full_match', computedPayloadHash: accepted.get('e')?.payloadHash });

  // One byte of the payload changed: 12.5 -> 12.6.
  const changed = await verify({ collection: 'invoices', recordId: 'e', payload: { ...payloadOf('e'), amount: 12.6 } });
  t.match(changed, { verified: false, verificationStatus: 'fail', reasonCategory: 'payload_mismatch' });
  t.not(changed.computedPayloadHash, accepted.get('e')?.payloadHash);

  t.match(await verify({ collection: 'invoices', recordId: 'e', recordVersion: '7' }), { verified: false, verificationStatus: 'fail', reasonCategory: 'version_not_found' });
  t.match(await verify({ collection: 'invoices', recordId: 'nobody' }), { verified: false, verificationStatus: 'fail', reasonCategory: 'not_found' });

  const e = accepted.get('e');
  if (e === undefined) throw new Error('e not accepted');
  const inBatch = await verify({ collection: 'invoices', recordId: 'e', database: 'erp', batchId: batch1, salt: e.salt, payload: payloadOf('e') });
  t.match(inBatch, { verified: true, verificationStatus: 'pass', reasonCategory: 'full_match', batchId: batch1, recordHash: e.recordHash, treeSize: 4 });
  t.same(inBatch.merkleProof, stored.merkleProof, 'the proof rebuilt from the manifest is the stored one');
  const byHash = await verify({ collection: 'invoices', recordId: 'e', database: 'erp', batchId: batch1, salt: e.salt, payloadHash: e.payloadHash });
  t.match(byHash, { verified: true, reasonCategory: 'verified_anchored' });
  t.match(await verify({ collection: 'invoices', recordId: 'e', database: 'erp', batchId: batch2, salt: e.salt, payload: payloadOf('e') }), { verificationStatus: 'fail', reasonCategory: 'not_in_batch' });
  t.match(await verify({ collection: 'invoices', recordId: 'e', database: 'erp', batchId: 'b_00000000000000000000000000000000', salt: e.salt, payload: payloadOf('e') }), {
    verificationStatus: 'fail',
    reasonCategory: 'not_on_chain',
  });
  const missing = await request<{ error: string; fieldErrors: { path: string }[] }>(svc, 'POST', '/api/v1/verify/record', { key, body: { collection: 'invoices', recordId: 'e', batchId: batch1 } });
  t.equal(missing.status, 400);
  t.same(missing.body.fieldErrors.map((f) => f.path).sort(), ['database', 'payload', 'salt']);

  await ingest(['lone']);
  await eventually(async () => {
    const r = await request<{ items: unknown[] }>(svc, 'GET', '/api/v1/records?tenantId=default&recordId=lone', { key });
    return r.body.items.length === 1 ? true : undefined;
  });
  t.match(await verify({ collection: 'invoices', recordId: 'lone' }), { verified: false, verificationStatus: 'pending', reasonCategory: 'pending_anchor' });
});

t.test('verify/payload and verify/snapshot', async (t) => {
  const e = accepted.get('e');
  if (e === undefined) throw new Error('e not accepted');
  const byPayload = await request<{ anchored: boolean; matches: number; verificationStatus: string; reasonCategory: string; results: Result[] }>(svc, 'POST', '/api/v1/verify/payload', {
    key,
    body: { payloadHash: e.payloadHash },
  });
  t.equal(byPayload.status, 200);
  t.match(byPayload.body, { anchored: true, matches: 1, verificationStatus: 'pass', reasonCategory: 'verified_anchored' });
  t.equal(byPayload.body.results[0]?.recordHash, e.recordHash);
  const byRecordHash = await request<{ anchored: boolean }>(svc, 'POST', '/api/v1/verify/payload', { key, body: { recordHash: e.recordHash } });
  t.equal(byRecordHash.body.anchored, true);
  const unknown = await request<{ anchored: boolean; reasonCategory: string; matches: number }>(svc, 'POST', '/api/v1/verify/payload', { key, body: { payloadHash: 'f'.repeat(64) } });
  t.match(unknown.body, { anchored: false, matches: 0, reasonCategory: 'not_found' });
  const both = await request<{ error: string }>(svc, 'POST', '/api/v1/verify/payload', { key, body: { payloadHash: e.payloadHash, recordHash: e.recordHash } });
  t.equal(both.status, 400);
  t.equal(both.body.error, 'validation_failed');

  const stored = await verify({ collection: 'invoices', recordId: 'e' });
  const snap = await request<{ verified: boolean; reasonCategory: string; anchoredOnChain: boolean; onChainMerkleRoot: string; confirmations: number; chainTxHash: string }>(
    svc,
    'GET',
    `/api/v1/verify/snapshot/${stored.snapshotId ?? ''}`,
    { key },
  );
  t.equal(snap.status, 200);
  t.match(snap.body, { verified: true, reasonCategory: 'verified_anchored', anchoredOnChain: true, onChainMerkleRoot: stored.merkleRoot });
  t.ok(snap.body.confirmations >= 1);
  t.equal((await request(svc, 'GET', '/api/v1/verify/snapshot/s_unknown', { key })).status, 404);
});

t.test('history and audit trail', async (t) => {
  const all = await request<{ items: { recordId: string | null; verificationStatus: string; reasonCategory: string; mode: string }[]; nextCursor: string | null }>(
    svc,
    'GET',
    '/api/v1/verify/history?recordId=e&limit=1000',
    { key },
  );
  t.equal(all.status, 200);
  t.ok(all.body.items.length >= 8, 'every attempt on e is stored');
  t.ok(all.body.items.every((i) => i.recordId === 'e'));
  t.ok(all.body.items.some((i) => i.reasonCategory === 'payload_mismatch' && i.verificationStatus === 'fail'));
  t.ok(all.body.items.some((i) => i.mode === 'batch'));
  const page1 = await request<{ items: { verificationId: string }[]; nextCursor: string | null }>(svc, 'GET', '/api/v1/verify/history?recordId=e&limit=2', { key });
  t.equal(page1.body.items.length, 2);
  t.type(page1.body.nextCursor, 'string');
  const page2 = await request<{ items: { verificationId: string }[] }>(svc, 'GET', `/api/v1/verify/history?recordId=e&limit=2&cursor=${page1.body.nextCursor ?? ''}`, { key });
  t.equal(page2.body.items.length, 2);
  t.notOk(page2.body.items.some((i) => page1.body.items.some((j) => j.verificationId === i.verificationId)), 'pages do not overlap');
  const future = await request<{ items: unknown[] }>(svc, 'GET', `/api/v1/verify/history?from=${Date.now() + 3_600_000}`, { key });
  t.equal(future.body.items.length, 0);
  t.equal((await request(svc, 'GET', '/api/v1/verify/history?from=yesterday', { key })).status, 400);

  const ingests = await eventually(async () => {
    const r = await request<{ items: { action: string; resource: string; outcome: string; actor: { keyId: string } }[] }>(svc, 'GET', '/api/v1/audit/history?action=record.ingest&limit=1000', { key });
    return r.body.items.length >= 9 ? r.body.items : undefined;
  });
  t.equal(ingests.length, 9, 'one ingestion entry per accepted record');
  t.ok(ingests.every((i) => i.action === 'record.ingest' && i.outcome === 'accepted'));
  const verifies = await request<{ items: { action: string; outcome: string }[] }>(svc, 'GET', '/api/v1/audit/history?action=verify.record&limit=1000', { key });
  t.ok(verifies.body.items.length >= 10);
  t.ok(verifies.body.items.some((i) => i.outcome === 'fail') && verifies.body.items.some((i) => i.outcome === 'pass'));
});

t.test('receipts and retrieval controls', async (t) => {
  const r = await request<Record<string, unknown>>(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=e', { key });
  t.equal(r.status, 200);
  t.match(r.headers.get('content-disposition'), /^attachment; filename="dris-receipt-invoices-e-v1\.json"$/);
  t.match(r.body, { receiptVersion: 1, hashScheme: 'dris-v1', recordId: 'e', batchId: batch1, treeSize: 4, recordHash: accepted.get('e')?.recordHash, salt: accepted.get('e')?.salt });
  t.notOk('payload' in r.body);
  const withPayload = await request<Record<string, unknown>>(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=e&includePayload=true', { key });
  t.same(withPayload.body['payload'], payloadOf('e'));
  t.equal((await request(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=lone', { key })).status, 409, 'no receipt before anchoring');
  t.equal((await request(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=nobody', { key })).status, 404);

  const put = await adminRequest(svc, 'PUT', '/admin/v1/tenants/default/retrieval-policy', {
    body: { defaultEffect: 'deny', rules: [{ effect: 'allow', collections: ['invoices'], scopes: ['evidence'] }] },
  });
  t.equal(put.status, 200);
  const checks = await request<{ allowed: number; denied: number; decisions: { decision: string; reason: string; ruleIndex: number | null; found: boolean }[] }>(
    svc,
    'POST',
    '/api/v1/evidence/retrieval-controls',
    { key, body: { purpose: 'annual audit', records: [{ collection: 'invoices', recordId: 'e' }, { collection: 'invoices', recordId: 'nobody' }] } },
  );
  t.equal(checks.status, 200);
  t.match(checks.body, { allowed: 1, denied: 1 });
  t.match(checks.body.decisions, [
    { decision: 'allowed', reason: 'rule_allow', ruleIndex: 0, found: true },
    { decision: 'denied', reason: 'not_found', ruleIndex: null, found: false },
  ]);
  const payloadScope = await request<{ decisions: { decision: string; reason: string }[] }>(svc, 'POST', '/api/v1/evidence/retrieval-controls', {
    key,
    body: { scope: 'payload', records: [{ collection: 'invoices', recordId: 'e' }] },
  });
  t.match(payloadScope.body.decisions, [{ decision: 'denied', reason: 'default_deny' }]);
  const denied = await request<{ error: string }>(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=e&includePayload=true', { key });
  t.equal(denied.status, 403, 'the policy now denies payload retrieval');
  t.equal(denied.body.error, 'forbidden_client');
  t.equal((await request(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=e', { key })).status, 200, 'evidence is still allowed');
  const access = await request<{ items: { outcome: string; detail: { scope?: string; purpose?: string } }[] }>(svc, 'GET', '/api/v1/audit/history?action=evidence.access&limit=1000', { key });
  t.ok(access.body.items.some((i) => i.outcome === 'denied' && i.detail.scope === 'payload'));
  t.ok(access.body.items.some((i) => i.outcome === 'allowed' && i.detail.purpose === 'annual audit'));
  const bad = await adminRequest<{ fieldErrors: { path: string }[] }>(svc, 'PUT', '/admin/v1/tenants/default/retrieval-policy', { body: { defaultEffect: 'maybe', rules: [] } });
  t.equal(bad.status, 400);
  t.same(bad.body.fieldErrors.map((f) => f.path), ['defaultEffect']);
  t.equal((await request(svc, 'PUT', '/admin/v1/tenants/default/retrieval-policy', { key, body: { defaultEffect: 'allow', rules: [] } })).status, 404, 'not on the public listener');
  t.equal((await request({ url: svc.adminUrl }, 'PUT', '/admin/v1/tenants/default/retrieval-policy', { key, body: { defaultEffect: 'allow', rules: [] } })).status, 401, 'an API key is not the admin token');
  await adminRequest(svc, 'PUT', '/admin/v1/tenants/default/retrieval-policy', { body: { defaultEffect: 'allow', rules: [] } });
});

t.test('tampered index rows and manifests', async (t) => {
  await svc.stop();
  // Batch 1's manifest block goes missing; batch 1 is then told to hold batch 2's manifest.
  const blocks = await filesUnder(path.join(dataDir, 'ipfs'));
  let removed = 0;
  for (const f of blocks) {
    const text = await readFile(f, 'utf8').catch(() => '');
    // The next manifest names batch 1 as its previous batch; only batch 1's own has batchSeq beside it.
    if (text.includes(`"batchId":"${batch1}","batchSeq"`)) {
      await rm(f);
      removed += 1;
    }
  }
  t.equal(removed, 1, 'the manifest of batch 1 is one block');
  await tamper([
    // Verification reads a record and its leaf from record_evidence_packed's row: its head
    // (EVIDENCE_ROW_HEAD, the version 8th), then the evidence in EVIDENCE_FIELDS order.
    // a: the salt (7th) changed, so the envelope no longer hashes to the stored record hash.
    tamperedRow('a', "replaceOne(e[9], JSONExtractString(e[9], 7), '" + '0'.repeat(32) + "')"),
    // b: the first element of the proof (12th) changed.
    tamperedRow('b', "replaceOne(e[9], JSONExtractString(e[9], 12, 1), '" + '0'.repeat(64) + "')"),
    // batch 1 points at batch 2's manifest.
    `INSERT INTO dris.batches SELECT * REPLACE ((SELECT any(manifest_cid) FROM dris.batches FINAL WHERE batch_id = '${batch2}') AS manifest_cid, version + 100 AS version) FROM dris.batches FINAL WHERE batch_id = '${batch1}'`,
    // batch 2 recorded as Failed, under a root that was never anchored: reconciliation adopts a
    // Failed batch whose root it finds on chain, and this one it cannot find.
    `INSERT INTO dris.batches SELECT * REPLACE ('Failed' AS status, '${'f'.repeat(64)}' AS merkle_root, version + 100 AS version) FROM dris.batches FINAL WHERE batch_id = '${batch2}'`,
  ]);
  await restart();
  // The answers below come from what the start read ahead (the tampered batch 1 included): the
  // same as read at the verification.
  const warmed = await eventually(() => {
    const line = svc.logs.find((l) => l.includes('"msg":"verification warmed up"'));
    return Promise.resolve(line === undefined ? undefined : (JSON.parse(line) as { batches: number }));
  }, 30_000);
  t.ok(warmed.batches >= 1, 'the anchored batch was read ahead');

  t.match(await verify({ collection: 'invoices', recordId: 'a' }), { verified: false, verificationStatus: 'fail', reasonCategory: 'record_hash_mismatch' });
  t.match(await verify({ collection: 'invoices', recordId: 'b' }), { verified: false, verificationStatus: 'fail', reasonCategory: 'proof_invalid' });
  const c = await verify({ collection: 'invoices', recordId: 'c' });
  t.match(c, { verified: false, verificationStatus: 'fail', reasonCategory: 'ipfs_mismatch', anchoredOnChain: true });
  t.match(c.ipfsEvidence, { fetched: true, hashMatchesIpfs: false, merkleRootMatchesChain: false });
  t.match(await verify({ collection: 'invoices', recordId: 'd' }), { verified: false, verificationStatus: 'pending', reasonCategory: 'anchor_failed' });
  const e = accepted.get('e');
  if (e === undefined) throw new Error('e not accepted');
  // The chain names batch 1's true manifest, whose block is gone: batchId mode cannot decide.
  t.match(await verify({ collection: 'invoices', recordId: 'e', database: 'erp', batchId: batch1, salt: e.salt, payload: payloadOf('e') }), {
    verified: false,
    verificationStatus: 'error',
    reasonCategory: 'ipfs_unavailable',
  });
});

t.test('a root missing on-chain, another root at its sequence, an unreachable chain', async (t) => {
  const url = await rpcUrl();
  const provider = new JsonRpcProvider(url, undefined, { staticNetwork: true });
  const snapshotId = (await provider.send('evm_snapshot', [])) as string;
  // With the record still waiting from the first test, these three close a batch of four.
  await ingest(['i', 'j', 'k']);
  const batch3 = await batchOf('k');
  const before = await verify({ collection: 'invoices', recordId: 'k' });
  t.match(before, { verified: true, batchId: batch3 });
  t.equal(await provider.send('evm_revert', [snapshotId]), true);
  const gone = await verify({ collection: 'invoices', recordId: 'k' });
  t.match(gone, { verified: false, verificationStatus: 'fail', reasonCategory: 'not_on_chain', anchoredOnChain: false });

  // Someone else's root lands at batch 3's sequence.
  const artifact = JSON.parse(await readFile(path.join(repoRoot, 'contracts', 'artifacts', 'DrisAnchor.json'), 'utf8')) as { abi: unknown[] };
  const wallet = new Wallet(ANVIL_DEV_ANCHORER_KEY, provider);
  const contract = new Contract(before.contractAddress ?? '', artifact.abi as never, wallet);
  const tx = (await contract.getFunction('anchor')(before.batchSeq ?? 0, `0x${'ab'.repeat(32)}`, 4, 'b_other', 'bafkother')) as { wait(): Promise<unknown> };
  await tx.wait();
  const other = await verify({ collection: 'invoices', recordId: 'k' });
  t.match(other, { verified: false, verificationStatus: 'fail', reasonCategory: 'root_mismatch', onChainMerkleRoot: 'ab'.repeat(32) });

  // The node stops answering: verification says it cannot decide, rather than failing the record.
  const port = new URL(url).port;
  const pid = execFileSync('pgrep', ['-f', `anvil.*--port ${port}`]).toString().trim().split('\n')[0] ?? '';
  process.kill(Number(pid), 'SIGSTOP');
  try {
    t.match(await verify({ collection: 'invoices', recordId: 'e' }), { verified: false, verificationStatus: 'error', reasonCategory: 'chain_unavailable' });
  } finally {
    process.kill(Number(pid), 'SIGCONT');
  }
  provider.destroy();
});

t.test('with the hot index deleted, batchId mode verifies from IPFS and the chain alone', async (t) => {
  await svc.stop();
  await rm(path.join(dataDir, 'clickhouse'), { recursive: true, force: true });
  await restart();
  const h = accepted.get('h');
  if (h === undefined) throw new Error('h not accepted');
  const gone = await verify({ collection: 'invoices', recordId: 'h' });
  t.equal(gone.reasonCategory, 'not_found', 'the hot index is empty');
  const r = await verify({ collection: 'invoices', recordId: 'h', database: 'erp', batchId: batch2, salt: h.salt, payload: payloadOf('h') });
  t.match(r, { verified: true, verificationStatus: 'pass', reasonCategory: 'full_match', batchId: batch2, recordHash: h.recordHash, anchoredOnChain: true });
  t.match(r.ipfsEvidence, { fetched: true, hashMatchesIpfs: true, merkleRootMatchesChain: true });
});

t.test('every status and every reason was reached', async (t) => {
  const reasons = Object.keys(REASON_STATUS);
  t.same([...reached.keys()].sort(), [...reasons].sort());
  t.same([...new Set(reached.values())].sort(), [...VERIFICATION_STATUSES].sort());
});

import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ANVIL_DEV_ANCHORER_KEY, freeLoopbackPort } from '../../src/adapters/chain/anvil-node.js';
import { deployAnchorContract } from '../../src/adapters/chain/ethers-chain.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import type { VerifyReport } from '../../src/cli/verify-command.js';
import { fromHex, toHex } from '../../src/domain/hashing/merkle.js';
import { HASH_SCHEME } from '../../src/domain/records/types.js';
import { RECEIPT_VERSION, type Receipt } from '../../src/domain/verification/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil } from '../harness/anvil.js';
import { startKubo } from '../harness/kubo.js';
import { cliPath, createKey, eventually, request, startService } from '../harness/service.js';

/**
 * The offline verifier with the service gone: dris anchors records on a harness anvil and pins
 * manifests to a harness Kubo, receipts are downloaded, the service is stopped, and the compiled
 * CLI checks the receipts against the chain over JSON-RPC and the manifests through Kubo's
 * gateway. Intact receipts pass (exit 0); a changed payload, a tampered receipt or a manifest of
 * another batch fail (exit 1) with their reasonCategory; an unreachable RPC is an error (exit 2).
 */

setLogLevel('silent');
ensureContractArtifact();
const hashing = new JsHashingBackend();

interface Accepted {
  recordId: string;
  recordHash: string;
  payloadHash: string;
  salt: string;
  acceptedAt: string;
}

interface Timeline {
  items: { batchId: string | null; leafIndex: number | null; treeSize: number | null }[];
}

interface BatchView {
  batchId: string;
  batchSeq: number;
  merkleRoot: string;
  ipfsCid: string;
  chainId: number;
  contractAddress: string;
  chainTxHash: string;
  blockNumber: number;
  anchoredAt: string;
}

interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runCli(args: readonly string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [cliPath, 'verify', ...args],
      { env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '' }, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const flip = (hex: string): string => `${hex[0] === '0' ? '1' : '0'}${hex.slice(1)}`;

t.test('receipts verify offline against anvil and Kubo, and tampering is caught', async (t: Test) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const kubo = await startKubo();
  t.teardown(() => kubo.stop());
  const deployment = await deployAnchorContract({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANVIL_DEV_ANCHORER_KEY } });
  const svc = await startService({
    env: {
      EVM_RPC_URL: anvil.rpcUrl,
      DRIS_CHAIN_ID: String(anvil.chainId),
      DRIS_ANCHORER_KEY: ANVIL_DEV_ANCHORER_KEY,
      DRIS_CONTRACT_ADDRESS: deployment.address,
      IPFS_API_URL: kubo.apiUrl,
      DRIS_BATCH_MAX_WAIT_MS: '300',
      DRIS_RATE_LIMITS: 'standard=1000000',
    },
  });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;

  const payloads: Record<string, Record<string, unknown>> = {
    'inv-1': { amount: 12.5, currency: 'EUR', lines: [{ sku: 'A-1', qty: 2 }] },
    'inv-2': { amount: 3, note: 'café ☕', tags: ['x', 'y'] },
    'inv-3': { nested: { deep: { value: null, ok: true } } },
    'inv-4': { amount: 99.99, currency: 'USD' },
  };
  const accepted = new Map<string, Accepted>();

  // Batch 1: three records in one bulk request, one flush; batch 2: one record after it.
  const bulk = await request<{ items: Accepted[] }>(svc, 'POST', '/api/v1/records/bulk', {
    key,
    body: {
      tenantId: 'acme',
      records: [
        { database: 'erp', collection: 'invoices', recordId: 'inv-1', recordPayload: payloads['inv-1'] },
        { database: 'erp', collection: 'invoices', recordId: 'inv-2', recordVersion: '2', operationType: 'insert', sourceTimestamp: '2026-01-02T03:04:05Z', recordPayload: payloads['inv-2'] },
        { database: 'erp', collection: 'invoices', recordId: 'inv-3', recordPayload: payloads['inv-3'] },
      ],
    },
  });
  t.equal(bulk.status, 202, 'bulk accepted');
  for (const item of bulk.body.items) accepted.set(item.recordId, item);
  const anchoredSnapshot = (recordId: string): Promise<unknown> =>
    eventually(
      async () => {
        const r = await request<{ items: { status: string }[] }>(svc, 'GET', `/api/v1/snapshots?recordId=${recordId}`, { key });
        return r.body.items.find((s) => s.status === 'Anchored');
      },
      180_000,
      300,
    );
  await anchoredSnapshot('inv-1');
  const single = await request<Accepted>(svc, 'POST', '/api/v1/records', { key, body: { tenantId: 'acme', database: 'erp', collection: 'invoices', recordId: 'inv-4', recordPayload: payloads['inv-4'] } });
  t.equal(single.status, 202, 'single accepted');
  accepted.set('inv-4', single.body);
  for (const id of ['inv-2', 'inv-3', 'inv-4']) await anchoredSnapshot(id);

  // Each receipt also built here from the 202 answer, the timeline, the batch and the manifest (read
  // from Kubo), so the endpoint's evidence is checked against an independent derivation.
  const manifests = new Map<string, string[]>();
  const built = new Map<string, Receipt>();
  for (const [recordId, acc] of accepted) {
    // The index and the anchor are consumers of their own: a record may be anchored a moment before
    // its row is indexed, and the timeline lists it once it is.
    const item = await eventually(
      async () => {
        const timeline = await request<Timeline>(svc, 'GET', `/api/v1/timeline/record?collection=invoices&recordId=${recordId}`, { key });
        return timeline.status === 200 ? timeline.body.items[0] : undefined;
      },
      30_000,
      200,
    );
    if (item?.batchId === null || item?.batchId === undefined || item.leafIndex === null || item.treeSize === null) throw new Error(`${recordId} is not in a batch`);
    const batch = (await request<BatchView>(svc, 'GET', `/api/v1/batches/${item.batchId}`, { key })).body;
    let leaves = manifests.get(batch.ipfsCid);
    if (leaves === undefined) {
      const res = await fetch(`${kubo.gatewayUrl}/ipfs/${batch.ipfsCid}?format=raw`, { headers: { accept: 'application/vnd.ipld.raw' } });
      leaves = ((await res.json()) as { leaves: string[] }).leaves;
      manifests.set(batch.ipfsCid, leaves);
    }
    const ingested = recordId === 'inv-2' ? { recordVersion: '2', operationType: 'insert' as const, sourceTimestamp: '2026-01-02T03:04:05Z' } : { recordVersion: '1', operationType: 'upsert' as const, sourceTimestamp: null };
    built.set(recordId, {
      receiptVersion: RECEIPT_VERSION,
      hashScheme: HASH_SCHEME,
      merkleAlgorithm: 'rfc9162-sha256',
      tenantId: 'acme',
      database: 'erp',
      collection: 'invoices',
      recordId,
      ...ingested,
      payloadHash: acc.payloadHash,
      salt: acc.salt,
      recordHash: acc.recordHash,
      leafIndex: item.leafIndex,
      treeSize: item.treeSize,
      merkleProof: hashing.inclusionProof(leaves.map(fromHex), item.leafIndex).map(toHex),
      merkleRoot: batch.merkleRoot,
      batchId: batch.batchId,
      batchSeq: batch.batchSeq,
      manifestCid: batch.ipfsCid,
      chainId: batch.chainId,
      contractAddress: batch.contractAddress,
      chainTxHash: batch.chainTxHash,
      blockNumber: batch.blockNumber,
      anchoredAt: batch.anchoredAt,
      acceptedAt: acc.acceptedAt,
      issuedAt: new Date().toISOString(),
    });
  }
  t.equal(built.get('inv-1')?.batchId, built.get('inv-3')?.batchId, 'the bulk records share a batch');
  t.not(built.get('inv-1')?.batchId, built.get('inv-4')?.batchId, 'the single record has a batch of its own');
  t.equal(built.get('inv-2')?.treeSize, 3);

  const receipts = new Map<string, Receipt>();
  await t.test('the receipt endpoint serves each record\'s receipt', async (t) => {
    for (const [recordId, mine] of built) {
      const res = await request<Receipt>(svc, 'GET', `/api/v1/receipts/record?collection=invoices&recordId=${recordId}`, { key });
      t.equal(res.status, 200, `${recordId}: 200`);
      if (res.status !== 200) continue;
      receipts.set(recordId, res.body);
      const { issuedAt: _a, acceptedAt: _b, ...evidence } = mine;
      t.match(res.body, evidence, `${recordId}: the evidence of an independent derivation`);
    }
  });
  // A receipt downloaded with its payload checks that payload without --payload.
  const withPayload = await request<Receipt & { payload?: unknown }>(svc, 'GET', '/api/v1/receipts/record?collection=invoices&recordId=inv-2&includePayload=true', { key });
  t.equal(withPayload.status, 200, 'a receipt with its payload');
  if (receipts.size < built.size) {
    // Without the endpoint, the CLI is still exercised on the receipts built here.
    t.comment('receipt endpoint missing or failing: verifying the receipts built from the batch and the manifest');
    for (const [recordId, mine] of built) if (!receipts.has(recordId)) receipts.set(recordId, mine);
  }

  await svc.stop();

  const dir = await mkdtemp(path.join(tmpdir(), 'dris-offline-verify-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  let n = 0;
  const file = async (content: unknown): Promise<string> => {
    const f = path.join(dir, `f${n++}.json`);
    await writeFile(f, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    return f;
  };
  const receiptOf = (id: string): Receipt => {
    const r = receipts.get(id);
    if (r === undefined) throw new Error(`no receipt for ${id}`);
    return r;
  };
  const rpc = ['--rpc', anvil.rpcUrl];
  const gateway = ['--ipfs-gateway', kubo.gatewayUrl];
  const verify = async (t: Test, what: string, receipt: unknown, extra: readonly string[], code: number, reason: string): Promise<VerifyReport> => {
    const run = await runCli([await file(receipt), ...rpc, '--json', ...extra]);
    t.equal(run.code, code, `${what}: exit ${code}`);
    let report: VerifyReport;
    try {
      report = JSON.parse(run.stdout) as VerifyReport;
    } catch {
      t.fail(`${what}: stdout is not JSON: ${run.stdout}${run.stderr}`);
      throw new Error('not JSON');
    }
    t.equal(report.reasonCategory, reason, `${what}: ${reason}`);
    t.equal(report.verified, code === 0, `${what}: verified`);
    return report;
  };

  await t.test('intact receipts verify', async (t) => {
    for (const id of ['inv-1', 'inv-2', 'inv-4']) {
      const payload = await file(payloads[id]);
      await verify(t, `${id} alone`, receiptOf(id), [], 0, 'verified_anchored');
      await verify(t, `${id} with its payload`, receiptOf(id), ['--payload', payload], 0, 'full_match');
      const full = await verify(t, `${id} with its payload and the manifest`, receiptOf(id), ['--payload', payload, ...gateway], 0, 'full_match');
      t.match(
        full.checks,
        { payloadHashMatches: true, recordHashMatches: true, proofValid: true, chainIdMatches: true, anchoredOnChain: true, anchorEventMatches: true, manifestMatchesCid: true, hashMatchesIpfs: true, merkleRootMatchesChain: true },
        `${id}: every check held`,
      );
    }
    if (withPayload.status === 200) {
      const own = await verify(t, 'a receipt carrying its payload', withPayload.body, [], 0, 'full_match');
      t.equal(own.computed.payloadSource, 'receipt');
      const swapped = { ...withPayload.body, payload: payloads['inv-1'] };
      await verify(t, "a receipt carrying another record's payload", swapped, [], 1, 'payload_mismatch');
    }
    // The payload as another program might write it: other member order, spacing and escapes.
    const rewritten = '{ "tags": ["x", "y"], "note": "caf\\u00e9 \\u2615",\n  "amount": 3.0 }';
    await verify(t, 'the same payload in other JSON text', receiptOf('inv-2'), ['--payload', await file(rewritten)], 0, 'full_match');

    const readable = await runCli([await file(receiptOf('inv-2')), ...rpc, '--payload', await file(payloads['inv-2']), ...gateway]);
    t.equal(readable.code, 0, 'readable report: exit 0');
    t.match(readable.stdout, /^ {2}✓ Merkle proof/m);
    t.notMatch(readable.stdout, /✗/, 'no failed check');
    t.match(readable.stdout.trimEnd().split('\n').at(-1), /^VERIFIED {2}pass · full_match/);
  });

  await t.test('a changed payload or a tampered receipt fails', async (t) => {
    const text = JSON.stringify(payloads['inv-2']);
    const oneByte = text.replace('"x"', '"z"');
    t.equal(oneByte.length, text.length);
    await verify(t, 'one byte changed in the payload', receiptOf('inv-2'), ['--payload', await file(oneByte)], 1, 'payload_mismatch');

    const r = receiptOf('inv-2');
    await verify(t, 'recordHash changed', { ...r, recordHash: flip(r.recordHash) }, [], 1, 'record_hash_mismatch');
    await verify(t, 'salt changed', { ...r, salt: flip(r.salt) }, [], 1, 'record_hash_mismatch');
    await verify(t, 'a proof element changed', { ...r, merkleProof: r.merkleProof.map((p, i) => (i === r.merkleProof.length - 1 ? flip(p) : p)) }, [], 1, 'proof_invalid');
    await verify(t, 'merkleRoot changed', { ...r, merkleRoot: flip(r.merkleRoot) }, [], 1, 'proof_invalid');
    // A forgery consistent in itself: the record hash as the only leaf of a tree of one.
    const forged = { ...r, leafIndex: 0, treeSize: 1, merkleProof: [], merkleRoot: toHex(hashing.leafHash(fromHex(r.recordHash))) };
    await verify(t, 'a forged root under a real batchSeq', forged, [], 1, 'root_mismatch');
    await verify(t, 'a forged root under an unused batchSeq', { ...forged, batchSeq: 99 }, [], 1, 'not_on_chain');
    await verify(t, 'another batch\'s batchSeq', { ...r, batchSeq: receiptOf('inv-4').batchSeq }, [], 1, 'root_mismatch');
    const tx = await verify(t, 'another transaction', { ...r, chainTxHash: receiptOf('inv-4').chainTxHash }, [], 1, 'not_on_chain');
    t.same(tx.chain?.mismatches, ['chainTxHash']);
    await verify(t, 'another anchoring time', { ...r, anchoredAt: '2020-01-01T00:00:00.000Z' }, [], 1, 'not_on_chain');
  });

  await t.test('a manifest of another batch fails', async (t) => {
    const r = receiptOf('inv-1');
    const other = { ...r, manifestCid: receiptOf('inv-4').manifestCid };
    const viaGateway = await verify(t, "another batch's manifest through the gateway", other, [...gateway], 1, 'ipfs_mismatch');
    t.match(viaGateway.checks, { manifestMatchesCid: true, hashMatchesIpfs: false, merkleRootMatchesChain: false });
    const viaChain = await verify(t, "another batch's manifest CID against the chain's", other, [], 1, 'ipfs_mismatch');
    t.equal(viaChain.checks.manifestCidMatchesChain, false);
  });

  await t.test('an unreachable RPC, another chain, usage errors: exit 2', async (t) => {
    const deadPort = await freeLoopbackPort();
    const r = receiptOf('inv-1');
    const dead = await runCli([await file(r), '--rpc', `http://127.0.0.1:${deadPort}`, '--json', '--timeout-ms', '10000']);
    t.equal(dead.code, 2, 'unreachable RPC: exit 2');
    const report = JSON.parse(dead.stdout) as VerifyReport;
    t.equal(report.reasonCategory, 'chain_unavailable');
    t.equal(report.verificationStatus, 'error');
    t.equal(report.chain?.error?.code, 'dependency_unavailable');

    const otherChain = await verify(t, 'a receipt naming another chain', { ...r, chainId: 1 }, [], 2, 'chain_unavailable');
    t.equal(otherChain.checks.chainIdMatches, false);

    const deadGateway = await verify(t, 'an unreachable gateway', r, ['--ipfs-gateway', `http://127.0.0.1:${deadPort}`], 2, 'ipfs_unavailable');
    t.equal(deadGateway.ipfs?.error?.code, 'dependency_unavailable');

    const noRpc = await runCli([await file(r)]);
    t.equal(noRpc.code, 2, 'no --rpc: exit 2');
    t.match(noRpc.stderr, /usage: dris verify/);
    const notReceipt = await runCli([await file({ hello: 'world' }), ...rpc]);
    t.equal(notReceipt.code, 2, 'not a receipt: exit 2');
    t.match(notReceipt.stdout, /NOT VERIFIED {2}error · validation_failed/);
  });
});

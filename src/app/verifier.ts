import type { HashingBackend } from '../domain/hashing/port.js';
import { fromHex, toHex } from '../domain/hashing/merkle.js';
import type { Pinner, PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch } from '../domain/pipeline/types.js';
import { HASH_SCHEME, type RecordEnvelope } from '../domain/records/types.js';
import { assess, outcomeOf, rootOfLeaves, type Assessment, type ChainObservation, type Claim, type ManifestObservation } from '../domain/verification/assess.js';
import { parseManifest } from '../domain/verification/manifest.js';
import type { BatchAnchor, ChainReader, EvidenceIndex, StoredRecord, VerificationHistory } from '../domain/verification/ports.js';
import { buildReceipt } from '../domain/verification/receipt.js';
import type {
  IpfsEvidence,
  OnChainProofLinks,
  ReasonCategory,
  Receipt,
  SnapshotVerification,
  VerificationHistoryEntry,
  VerificationMode,
  VerificationResult,
  VerifyPayloadRequest,
  VerifyPayloadResponse,
  VerifyRecordRequest,
} from '../domain/verification/types.js';
import { DrisError } from '../errors/dris-error.js';
import { componentLogger } from '../util/logger.js';
import { randomHex } from '../util/random.js';
import { TtlCache } from '../util/ttl-cache.js';
import { assertTenant, type Principal } from './authenticator.js';

/**
 * Verification through the service. The chain is read at verification time (never taken from the
 * database), through short-lived per-root caches so a burst of verifications of one batch costs
 * one chain read; manifests are cached by CID (content-addressed, hence immutable once checked).
 * Every attempt is stored in the verification history, which the audit trail lists as its
 * verification events (verification-events.ts): one row per attempt.
 */

export interface VerifierOptions {
  /** How long a chain read of one root is reused, milliseconds. 0 disables. */
  readonly chainCacheMs: number;
  /** Bound on fetching a manifest from IPFS, milliseconds. */
  readonly ipfsTimeoutMs: number;
  /** Public URL of a manifest, for ipfsEvidence.ipfsGatewayUrl (this service's gateway or a configured one). */
  readonly gatewayUrl?: (cid: string) => string | undefined;
  readonly explorerAddressUrl?: string;
  readonly explorerTxUrl?: string;
}

export interface VerifierDeps {
  readonly hashing: HashingBackend;
  readonly evidence: EvidenceIndex;
  readonly store: PipelineStore;
  /** null when this process has no access to the chain (then verifications answer chain_unavailable). */
  readonly chain: ChainReader | null;
  /** null when this process has no access to IPFS. */
  readonly pinner: Pinner | null;
  readonly history: VerificationHistory;
  readonly now?: () => number;
}

interface Caller {
  readonly principal: Principal;
  readonly correlationId: string;
}

interface ManifestEntry extends ManifestObservation {
  readonly computedRoot: string;
}

/**
 * Manifests kept at once: with uniform verifications over a hot index, every batch's manifest is
 * wanted again soon, and one refetched costs its parse and its root (a few ms for 1000 leaves).
 * A manifest of 1000 leaves holds about 90 KiB.
 */
const MANIFEST_CACHE_ENTRIES = 2048;

/**
 * How long stored-mode verification reuses the row of an Anchored batch. Each use still needs the
 * chain read (at most chainCacheMs old) to hold the batch's root at its sequence; when it does not,
 * the row is read again before the answer. What else the row holds (manifest, transaction) changes
 * only with a new anchor, which the chain read shows. With uniform verifications over a thousand
 * batches, rereading each row every minute was a query in every three of the index's.
 */
const ANCHORED_BATCH_REUSE_MS = 600_000;

const MAX_HASH_MATCHES = 100;
const MAX_HASH_VERIFICATIONS = 10;

function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}${randomHex(8)}`;
}

export class Verifier {
  readonly #log = componentLogger('verifier');
  readonly #now: () => number;
  readonly #anchors: TtlCache<string, { batchSeq: number; anchoredAtSec: number } | null>;
  readonly #eventsBySeq: TtlCache<number, Awaited<ReturnType<ChainReader['eventBySeq']>>>;
  readonly #eventsByBatch: TtlCache<string, Awaited<ReturnType<ChainReader['eventByBatchId']>>>;
  readonly #manifests = new TtlCache<string, ManifestEntry | 'invalid'>(24 * 3_600_000, MANIFEST_CACHE_ENTRIES);
  readonly #batches: TtlCache<string, BatchAnchor | null>;
  readonly #anchoredBatches: TtlCache<string, BatchAnchor | null>;
  readonly #anchoredReuseMs: number;

  constructor(
    private readonly deps: VerifierDeps,
    private readonly options: VerifierOptions,
  ) {
    this.#now = deps.now ?? Date.now;
    const ttl = options.chainCacheMs;
    // A root or batch in steady use is read again in the second half of its time to live, behind
    // the answers, so no verification waits for the chain or the index once it is warm; none
    // uses a read older than the time to live.
    this.#anchors = new TtlCache(ttl, 100_000, { refreshWithinMs: ttl / 2 });
    this.#eventsBySeq = new TtlCache(ttl, 10_000);
    this.#eventsByBatch = new TtlCache(ttl, 10_000);
    this.#batches = new TtlCache(ttl, 10_000);
    // Reading the chain every time (0) asks for everything fresh.
    this.#anchoredReuseMs = ttl > 0 ? Math.max(ttl, ANCHORED_BATCH_REUSE_MS) : 0;
    this.#anchoredBatches = new TtlCache(this.#anchoredReuseMs, 20_000, { refreshWithinMs: this.#anchoredReuseMs / 2 });
  }

  // ---- record ---------------------------------------------------------------------------------

  async verifyRecord(caller: Caller, req: VerifyRecordRequest): Promise<VerificationResult> {
    const tenantId = req.tenantId ?? caller.principal.tenantId;
    assertTenant(caller.principal, tenantId);
    const computedPayloadHash = req.payload === undefined ? undefined : this.#payloadHash(req.payload);
    const result =
      req.batchId !== undefined
        ? await this.#verifyInBatch(tenantId, req, req.batchId, computedPayloadHash)
        : await this.#verifyStored(tenantId, req, computedPayloadHash);
    await this.#remember(caller, result, result.mode);
    return result;
  }

  #payloadHash(payload: Record<string, unknown>): string {
    return this.deps.hashing.sha256Hex(Buffer.from(this.deps.hashing.canonicalize(payload), 'utf8'));
  }

  async #verifyStored(tenantId: string, req: VerifyRecordRequest, computedPayloadHash: string | undefined): Promise<VerificationResult> {
    const mode: VerificationMode = computedPayloadHash === undefined ? 'stored' : 'payload';
    const base = this.#base(mode, tenantId, req);
    const versions = await this.deps.evidence.findRecord({
      tenantId,
      collection: req.collection,
      recordId: req.recordId,
      ...(req.database === undefined ? {} : { database: req.database }),
    });
    if (versions.length === 0) return this.#outcome(base, 'not_found', computedPayloadHash);
    const candidates = req.recordVersion === undefined ? versions : versions.filter((v) => v.envelope.recordVersion === req.recordVersion);
    const record = candidates.at(-1);
    if (record === undefined) return this.#outcome(base, 'version_not_found', computedPayloadHash);
    return this.#verifyStoredRecord(base, record, computedPayloadHash);
  }

  /** `fresh`: the batch row is not the reused one (the chain disagreed with that). */
  async #verifyStoredRecord(base: VerificationResult, record: StoredRecord, computedPayloadHash: string | undefined, fresh = false): Promise<VerificationResult> {
    const r: VerificationResult = {
      ...base,
      database: record.envelope.database,
      collection: record.envelope.collection,
      recordVersion: record.envelope.recordVersion,
      recordHash: record.recordHash,
      snapshotHash: record.recordHash,
      payloadHash: record.envelope.payloadHash,
      ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
      ...(record.snapshotId === null ? {} : { snapshotId: record.snapshotId }),
      ...(record.batchId === null ? {} : { batchId: record.batchId }),
    };
    const tampered = computedPayloadHash !== undefined && computedPayloadHash !== record.envelope.payloadHash;
    if (record.batchId === null || record.leafIndex === null || record.treeSize === null) {
      return this.#outcome(r, tampered ? 'payload_mismatch' : 'pending_anchor', computedPayloadHash);
    }
    const batch = await this.#storedModeBatch(record.batchId, fresh);
    if (batch === null || batch.status !== 'Anchored' || batch.batchSeq === null) {
      const reason: ReasonCategory = tampered ? 'payload_mismatch' : batch?.status === 'Failed' ? 'anchor_failed' : 'pending_anchor';
      return this.#outcome({ ...r, leafIndex: record.leafIndex, treeSize: record.treeSize, merkleProof: [...record.merkleProof] }, reason, computedPayloadHash);
    }
    const claim: Claim = {
      envelope: record.envelope,
      recordHash: record.recordHash,
      leafIndex: record.leafIndex,
      treeSize: record.treeSize,
      merkleProof: record.merkleProof,
      merkleRoot: batch.merkleRoot,
      batchSeq: batch.batchSeq,
    };
    const [chain, manifest] = await Promise.all([this.#observeChain(batch.merkleRoot, batch.batchSeq), batch.manifestCid === null ? Promise.resolve(undefined) : this.#manifest(batch.manifestCid)]);
    if (!fresh && chain !== null && chain.anchorOfRoot?.batchSeq !== batch.batchSeq) {
      // The reused row may predate what the chain shows (a batch sent back to be anchored, or
      // adopted under another sequence): the answer is given on a row as recent as the chain read.
      return this.#verifyStoredRecord(base, record, computedPayloadHash, true);
    }
    const a = assess(this.deps.hashing, claim, {
      ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
      chain,
      ...(manifest === undefined ? {} : { manifest: manifest === 'invalid' ? invalidManifest() : manifest }),
    });
    return this.#fromAssessment(r, a, claim, batch, chain, batch.manifestCid, manifest);
  }

  async #verifyInBatch(tenantId: string, req: VerifyRecordRequest, batchId: string, computedPayloadHash: string | undefined): Promise<VerificationResult> {
    const base = this.#base('batch', tenantId, req);
    const fields: { path: string; code: string; message: string }[] = [];
    if (req.database === undefined) fields.push({ path: 'database', code: 'required', message: 'is required with batchId (the hot index is not read)' });
    if (req.salt === undefined) fields.push({ path: 'salt', code: 'required', message: 'is required with batchId (the salt of the 202 answer)' });
    const payloadHash = computedPayloadHash ?? req.payloadHash;
    if (payloadHash === undefined) fields.push({ path: 'payload', code: 'required', message: 'payload or payloadHash is required with batchId' });
    if (fields.length > 0 || req.database === undefined || req.salt === undefined || payloadHash === undefined) {
      throw new DrisError('validation_failed', 'batchId mode needs the record envelope', { fields });
    }
    const envelope: RecordEnvelope = {
      hashScheme: HASH_SCHEME,
      tenantId,
      database: req.database,
      collection: req.collection,
      recordId: req.recordId,
      recordVersion: req.recordVersion ?? '1',
      operationType: req.operationType ?? 'upsert',
      sourceTimestamp: req.sourceTimestamp ?? null,
      payloadHash,
      salt: req.salt,
    };
    const recordHash = this.deps.hashing.recordHashes([envelope])[0] ?? '';
    const r: VerificationResult = {
      ...base,
      database: envelope.database,
      recordVersion: envelope.recordVersion,
      recordHash,
      snapshotHash: recordHash,
      payloadHash,
      ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
      batchId,
    };
    const chain = this.deps.chain;
    if (chain === null) return this.#outcome(r, 'chain_unavailable', computedPayloadHash);
    let event: Awaited<ReturnType<ChainReader['eventByBatchId']>>;
    try {
      event = await this.#eventsByBatch.get(batchId, () => chain.eventByBatchId(batchId));
    } catch (err) {
      this.#log.warn({ code: codeOf(err) }, 'chain read failed');
      return this.#outcome(r, 'chain_unavailable', computedPayloadHash);
    }
    if (event === null) return this.#outcome(r, 'not_on_chain', computedPayloadHash);
    const withChain: VerificationResult = { ...r, batchSeq: event.batchSeq, merkleRoot: event.merkleRoot, chainTxHash: event.txHash, blockNumber: event.blockNumber };
    const manifest = await this.#manifest(event.manifestCid);
    if (manifest === null) return this.#outcome({ ...withChain, ipfsEvidence: this.#ipfsEvidence(event.manifestCid, false, false, false) }, 'ipfs_unavailable', computedPayloadHash);
    if (manifest === 'invalid' || manifest.computedRoot !== event.merkleRoot || manifest.merkleRoot !== event.merkleRoot) {
      return this.#outcome({ ...withChain, ipfsEvidence: this.#ipfsEvidence(event.manifestCid, true, false, false) }, 'ipfs_mismatch', computedPayloadHash);
    }
    // The root matched, so the leaves are the batch's own, all distinct: the first match is the one.
    const leafIndex = manifest.leaves.indexOf(recordHash);
    if (leafIndex < 0) {
      return this.#outcome({ ...withChain, ipfsEvidence: this.#ipfsEvidence(event.manifestCid, true, false, true) }, 'not_in_batch', computedPayloadHash);
    }
    const leaves = manifest.leaves.map((l) => fromHex(l));
    const proof = this.deps.hashing.inclusionProof(leaves, leafIndex).map(toHex);
    const claim: Claim = { envelope, recordHash, leafIndex, treeSize: manifest.leaves.length, merkleProof: proof, merkleRoot: event.merkleRoot, batchSeq: event.batchSeq };
    const observed = await this.#observeChain(event.merkleRoot, event.batchSeq);
    const a = assess(this.deps.hashing, claim, { ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }), chain: observed, manifest, manifestRequired: true });
    const pseudoBatch = { batchSeq: event.batchSeq, txHash: event.txHash, blockNumber: event.blockNumber };
    return this.#fromAssessment(withChain, a, claim, pseudoBatch, observed, event.manifestCid, manifest);
  }

  // ---- payload --------------------------------------------------------------------------------

  async verifyPayload(caller: Caller, req: VerifyPayloadRequest): Promise<VerifyPayloadResponse> {
    const tenantId = req.tenantId ?? caller.principal.tenantId;
    assertTenant(caller.principal, tenantId);
    if ((req.payloadHash === undefined) === (req.recordHash === undefined)) {
      throw new DrisError('validation_failed', 'send exactly one of payloadHash and recordHash', {
        fields: [{ path: req.payloadHash === undefined ? 'payloadHash' : 'recordHash', code: 'one_of', message: 'exactly one of payloadHash and recordHash is required' }],
      });
    }
    const hashType = req.payloadHash !== undefined ? 'payloadHash' : 'recordHash';
    const hash = (req.payloadHash ?? req.recordHash) as string;
    const records = await this.deps.evidence.findByHash(tenantId, hashType, hash, MAX_HASH_MATCHES);
    const verifiedAt = new Date(this.#now()).toISOString();
    const verificationId = newId('ver');
    const results: VerificationResult[] = [];
    for (const record of records.slice(0, MAX_HASH_VERIFICATIONS)) {
      const base = this.#base('hash', tenantId, { collection: record.envelope.collection, recordId: record.envelope.recordId });
      results.push(await this.#verifyStoredRecord({ ...base, verificationId, verifiedAt }, record, undefined));
    }
    const best = results.find((x) => x.verified) ?? results[0];
    const reason: ReasonCategory = best?.reasonCategory ?? 'not_found';
    const outcome = outcomeOf(reason);
    const answer: VerifyPayloadResponse = {
      hash,
      hashType,
      tenantId,
      matches: records.length,
      anchored: best?.verified ?? false,
      verificationStatus: outcome.status,
      reasonCategory: reason,
      verifiedAt,
      verificationId,
      results,
      message: best?.message ?? outcome.message,
    };
    await this.#remember(
      caller,
      {
        ...(best ?? this.#base('hash', tenantId, { collection: '', recordId: '' })),
        verificationId,
        verifiedAt,
        verified: answer.anchored,
        verificationStatus: answer.verificationStatus,
        reasonCategory: reason,
        message: answer.message,
      },
      'hash',
    );
    return answer;
  }

  // ---- snapshot -------------------------------------------------------------------------------

  async verifySnapshot(caller: Caller, snapshotId: string, tenants: readonly string[]): Promise<SnapshotVerification> {
    let snapshot = null;
    for (const t of tenants) {
      snapshot = await this.deps.store.getSnapshot(t, snapshotId);
      if (snapshot !== null) break;
    }
    if (snapshot === null) throw new DrisError('not_found', 'no such snapshot');
    const verifiedAt = new Date(this.#now()).toISOString();
    const base = {
      snapshotId,
      tenantId: snapshot.tenantId,
      status: snapshot.status,
      recordCount: snapshot.recordCount,
      batchId: snapshot.batchId,
      verifiedAt,
      verificationId: newId('ver'),
      anchoredOnChain: false,
    };
    const batch = await this.#batch(snapshot.batchId);
    let answer: SnapshotVerification;
    const finish = (reason: ReasonCategory, extra: Partial<SnapshotVerification>): SnapshotVerification => {
      const o = outcomeOf(reason);
      return { ...base, ...extra, verificationStatus: o.status, reasonCategory: reason, verified: o.status === 'pass', message: o.message };
    };
    if (batch === null || batch.status !== 'Anchored' || batch.batchSeq === null) {
      answer = finish(batch?.status === 'Failed' ? 'anchor_failed' : 'pending_anchor', batch === null ? {} : { merkleRoot: batch.merkleRoot });
    } else {
      const chainInfo = this.#chainFields(batch);
      const chain = this.deps.chain;
      try {
        if (chain === null) throw new DrisError('dependency_unavailable', 'no chain access');
        const [anchor, event, head] = await Promise.all([
          this.#anchors.get(batch.merkleRoot, () => chain.anchorOf(batch.merkleRoot)),
          chain.eventByRoot(batch.merkleRoot),
          chain.headBlock(),
        ]);
        const extra: Partial<SnapshotVerification> = { merkleRoot: batch.merkleRoot, batchSeq: batch.batchSeq, ...chainInfo, ...(batch.manifestCid === null ? {} : { ipfsCid: batch.manifestCid }) };
        if (anchor === null || event === null) {
          answer = finish('not_on_chain', extra);
        } else if (anchor.batchSeq !== batch.batchSeq || event.merkleRoot !== batch.merkleRoot) {
          answer = finish('root_mismatch', { ...extra, anchoredOnChain: true, onChainMerkleRoot: event.merkleRoot });
        } else {
          answer = finish('verified_anchored', {
            ...extra,
            anchoredOnChain: true,
            onChainMerkleRoot: event.merkleRoot,
            onChainAnchoredAt: new Date(anchor.anchoredAtSec * 1000).toISOString(),
            chainTxHash: event.txHash,
            blockNumber: event.blockNumber,
            confirmations: Math.max(0, head - event.blockNumber + 1),
            onChainProof: this.#links(event.txHash),
          });
        }
      } catch (err) {
        this.#log.warn({ code: codeOf(err) }, 'chain read failed');
        answer = finish('chain_unavailable', { merkleRoot: batch.merkleRoot, batchSeq: batch.batchSeq, ...chainInfo });
      }
    }
    await this.#store({
      verificationId: answer.verificationId,
      at: verifiedAt,
      tenantId: snapshot.tenantId,
      clientId: caller.principal.clientId,
      keyId: caller.principal.keyId,
      mode: 'snapshot',
      database: null,
      collection: null,
      recordId: null,
      recordVersion: null,
      snapshotId,
      batchId: snapshot.batchId,
      verified: answer.verified,
      verificationStatus: answer.verificationStatus,
      reasonCategory: answer.reasonCategory,
      correlationId: caller.correlationId,
    });
    return answer;
  }

  // ---- receipts -------------------------------------------------------------------------------

  /** The receipt of a record's newest (or given) version; not_found, or invalid_state until anchored. */
  async receipt(tenantId: string, q: { collection: string; recordId: string; database?: string; recordVersion?: string }): Promise<{ receipt: Receipt; record: StoredRecord }> {
    const versions = await this.deps.evidence.findRecord({ tenantId, ...q });
    const record = versions.at(-1);
    if (record === undefined) throw new DrisError('not_found', 'no such record');
    const batch = record.batchId === null ? null : await this.#batch(record.batchId);
    const receipt = batch === null ? null : buildReceipt(record, batch, this.#now());
    if (receipt === null) throw new DrisError('invalid_state', 'the record is not anchored yet; its receipt exists once its batch is anchored', { extra: { status: batch?.status ?? 'Ingested' } });
    return { receipt, record };
  }

  // ---- parts ----------------------------------------------------------------------------------

  #base(mode: VerificationMode, tenantId: string, req: { collection: string; recordId: string; database?: string; recordVersion?: string }): VerificationResult {
    return {
      verified: false,
      verificationStatus: 'fail',
      reasonCategory: 'not_found',
      verifiedAt: new Date(this.#now()).toISOString(),
      verificationId: newId('ver'),
      mode,
      tenantId,
      ...(req.database === undefined ? {} : { database: req.database }),
      collection: req.collection,
      recordId: req.recordId,
      ...(req.recordVersion === undefined ? {} : { recordVersion: req.recordVersion }),
      message: '',
    };
  }

  #outcome(r: VerificationResult, reason: ReasonCategory, computedPayloadHash: string | undefined): VerificationResult {
    const o = outcomeOf(reason);
    return { ...r, ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }), verified: false, verificationStatus: o.status, reasonCategory: reason, message: o.message };
  }

  async #batch(batchId: string): Promise<BatchAnchor | null> {
    return this.#batches.get(batchId, () => this.deps.evidence.findBatch(batchId));
  }

  /**
   * The batch row for stored-mode verification: an Anchored one is reused (ANCHORED_BATCH_REUSE_MS);
   * `fresh` gives one at most chainCacheMs old, as every other read of a batch.
   */
  async #storedModeBatch(batchId: string, fresh: boolean): Promise<BatchAnchor | null> {
    if (fresh) {
      this.#anchoredBatches.delete(batchId);
      return this.#batch(batchId);
    }
    return this.#anchoredBatches.get(batchId, () => this.#batch(batchId), (b) => (b?.status === 'Anchored' ? this.#anchoredReuseMs : 0));
  }

  /** The chain now: the contract's anchor of the root and, when absent, the root at the batch's sequence. */
  async #observeChain(merkleRoot: string, batchSeq: number): Promise<ChainObservation | null> {
    const chain = this.deps.chain;
    if (chain === null) return null;
    try {
      const anchorOfRoot = await this.#anchors.get(merkleRoot, () => chain.anchorOf(merkleRoot));
      if (anchorOfRoot !== null && anchorOfRoot.batchSeq === batchSeq) return { anchorOfRoot };
      const atSeq = await this.#eventsBySeq.get(batchSeq, () => chain.eventBySeq(batchSeq));
      return { anchorOfRoot, rootAtSeq: atSeq?.merkleRoot ?? null };
    } catch (err) {
      this.#log.warn({ code: codeOf(err) }, 'chain read failed');
      return null;
    }
  }

  /** A manifest by CID: null when it cannot be fetched now, 'invalid' when its bytes are no manifest. */
  async #manifest(cid: string): Promise<ManifestEntry | 'invalid' | null> {
    const pinner = this.deps.pinner;
    if (pinner === null) return null;
    try {
      return await this.#manifests.get(cid, async () => {
        const bytes = await pinner.cat(cid, { timeoutMs: this.options.ipfsTimeoutMs });
        const m = parseManifest(bytes);
        if (m === null) return 'invalid';
        return { ...m, computedRoot: rootOfLeaves(this.deps.hashing, m.leaves) };
      });
    } catch (err) {
      this.#log.warn({ code: codeOf(err) }, 'manifest fetch failed');
      return null;
    }
  }

  #links(txHash: string | null): OnChainProofLinks {
    const chain = this.deps.chain;
    const out: OnChainProofLinks = {};
    if (this.options.explorerAddressUrl !== undefined && chain !== null) out.explorerContractUrl = this.options.explorerAddressUrl.replace('{address}', chain.contractAddress);
    if (this.options.explorerTxUrl !== undefined && txHash !== null) out.explorerEventUrl = this.options.explorerTxUrl.replace('{tx}', txHash);
    return out;
  }

  #chainFields(batch: Pick<Batch, 'txHash' | 'blockNumber'>): { chainId?: number; contractAddress?: string; chainTxHash?: string; blockNumber?: number } {
    const chain = this.deps.chain;
    return {
      ...(chain === null ? {} : { chainId: chain.chainId, contractAddress: chain.contractAddress }),
      ...(batch.txHash === null ? {} : { chainTxHash: batch.txHash }),
      ...(batch.blockNumber === null ? {} : { blockNumber: batch.blockNumber }),
    };
  }

  #ipfsEvidence(cid: string, fetched: boolean, hashMatchesIpfs: boolean, merkleRootMatchesChain: boolean): IpfsEvidence {
    const url = this.options.gatewayUrl?.(cid);
    return { ipfsCid: cid, ...(url === undefined ? {} : { ipfsGatewayUrl: url }), hashMatchesIpfs, merkleRootMatchesChain, fetched };
  }

  #fromAssessment(
    r: VerificationResult,
    a: Assessment,
    claim: Claim,
    batch: Pick<Batch, 'batchSeq' | 'txHash' | 'blockNumber'>,
    chain: ChainObservation | null,
    manifestCid: string | null,
    manifest: ManifestEntry | 'invalid' | null | undefined,
  ): VerificationResult {
    const anchor = chain?.anchorOfRoot ?? null;
    const onChainRoot = anchor !== null ? claim.merkleRoot : (chain?.rootAtSeq ?? undefined);
    return {
      ...r,
      verified: a.verified,
      verificationStatus: a.status,
      reasonCategory: a.reason,
      message: a.message,
      merkleRoot: claim.merkleRoot,
      merkleProof: [...claim.merkleProof],
      leafIndex: claim.leafIndex,
      treeSize: claim.treeSize,
      ...(batch.batchSeq === null ? {} : { batchSeq: batch.batchSeq }),
      ...this.#chainFields(batch),
      ...(chain === null ? {} : { anchoredOnChain: anchor !== null }),
      ...(onChainRoot === undefined ? {} : { onChainMerkleRoot: onChainRoot }),
      ...(anchor === null ? {} : { onChainAnchoredAt: new Date(anchor.anchoredAtSec * 1000).toISOString() }),
      ...(chain === null ? {} : { onChainProof: this.#links(batch.txHash) }),
      ...(manifestCid === null
        ? {}
        : {
            ipfsEvidence: this.#ipfsEvidence(
              manifestCid,
              manifest !== null && manifest !== undefined,
              a.checks.hashMatchesIpfs === true,
              a.checks.merkleRootMatchesChain === true,
            ),
          }),
    };
  }

  async #remember(caller: Caller, r: VerificationResult, mode: VerificationMode): Promise<void> {
    await this.#store({
      verificationId: r.verificationId,
      at: r.verifiedAt,
      tenantId: r.tenantId,
      clientId: caller.principal.clientId,
      keyId: caller.principal.keyId,
      mode,
      database: r.database ?? null,
      collection: r.collection ?? null,
      recordId: r.recordId === '' ? null : r.recordId,
      recordVersion: r.recordVersion ?? null,
      snapshotId: r.snapshotId ?? null,
      batchId: r.batchId ?? null,
      verified: r.verified,
      verificationStatus: r.verificationStatus,
      reasonCategory: r.reasonCategory,
      correlationId: caller.correlationId,
    });
  }

  /** The history entry of one attempt, also its audit event, awaited: an answer implies it is stored. */
  async #store(entry: VerificationHistoryEntry): Promise<void> {
    await this.deps.history.append([entry]);
  }
}

function codeOf(err: unknown): string | undefined {
  return err instanceof DrisError ? err.code : undefined;
}

/** A manifest whose bytes are not a manifest: matches nothing. */
function invalidManifest(): ManifestObservation {
  return { merkleRoot: '', treeSize: -1, leaves: [], computedRoot: '' };
}

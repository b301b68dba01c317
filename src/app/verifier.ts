import type { HashingBackend } from '../domain/hashing/port.js';
import type { Pinner, PipelineStore } from '../domain/pipeline/ports.js';
import type { ChainReader, EvidenceIndex, StoredRecord, VerificationHistory } from '../domain/verification/ports.js';
import { buildReceipt } from '../domain/verification/receipt.js';
import type {
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
import { componentLogger, type Logger } from '../util/logger.js';
import { assertTenant, type Principal } from './authenticator.js';
import { NO_EVENTS, type EventPublisher } from './events.js';
import type { VerifyContext } from './verification-context.js';
import { VerificationReads } from './verification-reads.js';
import { VerificationResults, type ResultOptions } from './verification-results.js';
import { warmVerification, type WarmUpOptions, type WarmUpResult } from './verification-warm-up.js';
import { verifyInBatch } from './verify-in-batch.js';
import { verifyPayload } from './verify-payload.js';
import { payloadHashOf, verifyStored } from './verify-record.js';
import { verifySnapshot } from './verify-snapshot.js';

/**
 * Verification through the service: one use case per mode (verify-record.ts: stored and payload;
 * verify-in-batch.ts: batch; verify-payload.ts: hash; verify-snapshot.ts), over the reads of
 * verification-reads.ts (the chain read at verification time, through short-lived caches).
 * Every attempt is stored in the verification history, which the audit trail lists as its
 * verification events (verification-events.ts): one row per attempt; and published
 * (VerificationPerformed) once stored.
 */

export interface VerifierOptions extends ResultOptions {
  /** How long a chain read of one root is reused, milliseconds. 0 disables. */
  readonly chainCacheMs: number;
  /** Bound on fetching a manifest from IPFS, milliseconds. */
  readonly ipfsTimeoutMs: number;
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
  readonly events?: EventPublisher;
  readonly logger?: Logger;
}

interface Caller {
  readonly principal: Principal;
  readonly correlationId: string;
}

export class Verifier {
  readonly #ctx: VerifyContext;
  readonly #history: VerificationHistory;
  readonly #events: EventPublisher;

  constructor(deps: VerifierDeps, options: VerifierOptions) {
    const now = deps.now ?? Date.now;
    const log = deps.logger ?? componentLogger('verifier');
    const reads = new VerificationReads({
      hashing: deps.hashing,
      evidence: deps.evidence,
      chain: deps.chain,
      pinner: deps.pinner,
      chainCacheMs: options.chainCacheMs,
      ipfsTimeoutMs: options.ipfsTimeoutMs,
      log,
    });
    const results = new VerificationResults(deps.chain, options, now);
    this.#ctx = { hashing: deps.hashing, evidence: deps.evidence, store: deps.store, reads, results, now, log };
    this.#history = deps.history;
    this.#events = deps.events ?? NO_EVENTS;
  }

  /** Reads ahead what verifications of the newest batches need (verification-warm-up.ts). */
  warmUp(options: WarmUpOptions): Promise<WarmUpResult> {
    return warmVerification(this.#ctx.evidence, this.#ctx.reads, this.#ctx.log, options);
  }

  async verifyRecord(caller: Caller, req: VerifyRecordRequest): Promise<VerificationResult> {
    const started = performance.now();
    const tenantId = req.tenantId ?? caller.principal.tenantId;
    assertTenant(caller.principal, tenantId);
    const computedPayloadHash = req.payload === undefined ? undefined : payloadHashOf(this.#ctx, req.payload);
    const result =
      req.batchId !== undefined
        ? await verifyInBatch(this.#ctx, tenantId, req, req.batchId, computedPayloadHash)
        : await verifyStored(this.#ctx, tenantId, req, computedPayloadHash);
    await this.#remember(caller, result, result.mode, started);
    return result;
  }

  async verifyPayload(caller: Caller, req: VerifyPayloadRequest): Promise<VerifyPayloadResponse> {
    const started = performance.now();
    const tenantId = req.tenantId ?? caller.principal.tenantId;
    assertTenant(caller.principal, tenantId);
    const { answer, remembered } = await verifyPayload(this.#ctx, tenantId, req);
    await this.#remember(caller, remembered, 'hash', started);
    return answer;
  }

  async verifySnapshot(caller: Caller, snapshotId: string, tenants: readonly string[]): Promise<SnapshotVerification> {
    const started = performance.now();
    const answer = await verifySnapshot(this.#ctx, snapshotId, tenants);
    await this.#record(
      {
        verificationId: answer.verificationId,
        at: answer.verifiedAt,
        tenantId: answer.tenantId,
        clientId: caller.principal.clientId,
        keyId: caller.principal.keyId,
        mode: 'snapshot',
        database: null,
        collection: null,
        recordId: null,
        recordVersion: null,
        snapshotId,
        batchId: answer.batchId,
        verified: answer.verified,
        verificationStatus: answer.verificationStatus,
        reasonCategory: answer.reasonCategory,
        correlationId: caller.correlationId,
      },
      started,
    );
    return answer;
  }

  /** The receipt of a record's newest (or given) version; not_found, or invalid_state until anchored. */
  async receipt(tenantId: string, q: { collection: string; recordId: string; database?: string; recordVersion?: string }): Promise<{ receipt: Receipt; record: StoredRecord }> {
    const versions = await this.#ctx.evidence.findRecord({ tenantId, ...q });
    const record = versions.at(-1);
    if (record === undefined) throw new DrisError('not_found', 'no such record');
    const batch = record.batchId === null ? null : await this.#ctx.reads.batch(record.batchId);
    const receipt = batch === null ? null : buildReceipt(record, batch, this.#ctx.now());
    if (receipt === null) throw new DrisError('invalid_state', 'the record is not anchored yet; its receipt exists once its batch is anchored', { extra: { status: batch?.status ?? 'Ingested' } });
    return { receipt, record };
  }

  async #remember(caller: Caller, r: VerificationResult, mode: VerificationMode, started: number): Promise<void> {
    await this.#record(
      {
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
      },
      started,
    );
  }

  /** The history entry of one attempt, also its audit event, awaited: an answer implies it is stored. */
  async #record(entry: VerificationHistoryEntry, started: number): Promise<void> {
    await this.#history.append([entry]);
    this.#events.publish({
      type: 'VerificationPerformed',
      mode: entry.mode,
      tenantId: entry.tenantId,
      verified: entry.verified,
      verificationStatus: entry.verificationStatus,
      reasonCategory: entry.reasonCategory,
      durationMs: performance.now() - started,
    });
  }
}

import type { FormedBatch } from './batch-formation.js';
import type { Batch, BatchRef, BatchStatus, LifecycleEntry, ListedSnapshot, Snapshot } from './types.js';

/**
 * Ports of the anchoring pipeline: content-addressed storage for batch manifests (IPFS) and the
 * chain that commits batch roots. The accumulator and the anchorer depend on these only.
 */

/** Content-addressed storage of manifests. */
export interface Pinner {
  /**
   * Adds bytes as UnixFS (CIDv1, sha2-256, raw leaves, 256 KiB chunks) and pins them; returns the
   * CID (base32 text). The same bytes give the same CID on every adapter.
   */
  add(bytes: Uint8Array): Promise<string>;
  /** The CID `add` gives these bytes, computed here: nothing is stored or sent. */
  cidOf(bytes: Uint8Array): Promise<string>;
  /** The whole content of a CID, verified against it; DrisError('not_found') when absent. */
  cat(cid: string, options?: { readonly timeoutMs?: number }): Promise<Uint8Array>;
  check(): Promise<void>;
  close(): Promise<void>;
}

/** What one anchor transaction commits (DECISIONS, anchor contract). */
export interface AnchorRequest {
  /** Exactly the contract's last sequence + 1. */
  readonly batchSeq: number;
  /** 32-byte root, lowercase hex without 0x. */
  readonly merkleRoot: string;
  readonly recordCount: number;
  readonly batchId: string;
  readonly manifestCid: string;
}

export interface AnchorOptions {
  /**
   * Aborted: the caller gives the anchor up (a term of leadership ended). Not sent yet, it is not
   * sent; sent, no version of it is sent again and anchor() rejects with
   * DrisError('dependency_unavailable', reason 'abandoned') at once, though it may still be mined.
   */
  readonly signal?: AbortSignal;
}

/** A mined anchor, as the chain reports it. */
export interface AnchorReceipt {
  readonly txHash: string;
  readonly blockNumber: number;
  /** Block timestamp, epoch seconds. */
  readonly blockTimestamp: number;
  readonly chainId: number;
  readonly contractAddress: string;
  /** Gas the transaction used, when the adapter sent it (not for an anchor found in the logs). */
  readonly gasUsed?: number;
  /** Fee paid for it, wei as a decimal string (gas used times the effective gas price). */
  readonly feeWei?: string;
}

/** An anchor read back from the contract's storage. */
export interface OnChainAnchor {
  readonly batchSeq: number;
  readonly merkleRoot: string;
  /** Block timestamp of the anchoring, epoch seconds. */
  readonly anchoredAt: number;
}

export interface ChainInfo {
  readonly chainId: number;
  readonly contractAddress: string;
  /** JSON-RPC URL anyone may use to check anchors (the embedded node's, or the configured one). */
  readonly rpcUrl: string;
  readonly anchorerAddress: string;
  readonly confirmations: number;
  /** Block the contract was deployed in, where searches of its events may start (0 when unknown). */
  readonly deployBlock?: number;
  /** Explorer link templates with `{address}` / `{tx}` placeholders, when configured. */
  readonly explorerAddressUrl?: string;
  readonly explorerTxUrl?: string;
}

export interface Chain {
  info(): ChainInfo;
  /** The contract's last committed batchSeq (0 before the first anchor). */
  lastSequence(): Promise<number>;
  /**
   * Submits the anchor and resolves once it has the configured confirmations. Throws
   * DrisError('invalid_state') when the contract refuses the sequence or the root (a stale
   * leader, or already anchored), 'dependency_unavailable' / 'timeout' when the node is unreachable.
   * Calls may overlap: anchors are sent in call order, so sequence n+1 may be sent before n is
   * confirmed; if n then fails, n+1 is refused (before it is sent, or as a reverted transaction).
   * An anchor sent before the chain was found to have gone back (blocks lost) is abandoned:
   * DrisError('dependency_unavailable', reason 'chain_rewound'), and the `onReset` listeners run.
   */
  anchor(request: AnchorRequest, options?: AnchorOptions): Promise<AnchorReceipt>;
  /** The anchor stored for a root, read from the contract now; null when none. */
  anchorOf(merkleRoot: string): Promise<OnChainAnchor | null>;
  /**
   * The Anchored event of a root (its transaction, block and manifest CID), found from the chain's
   * logs; null when the root was never anchored. Recovers a transaction whose hash was lost.
   */
  findAnchorEvent(merkleRoot: string): Promise<(AnchorReceipt & { readonly batchSeq: number; readonly manifestCid: string }) | null>;
  /** Whether a transaction is still in the canonical chain, with its confirmations; null when not. */
  receiptOf(txHash: string): Promise<{ readonly blockNumber: number; readonly confirmations: number } | null>;
  /**
   * Registers a listener for a chain that went back: a node that came back after a crash (the
   * embedded node's supervisor restarts it from its last state dump), or a head or an account
   * nonce found behind what was seen (blocks lost). Anchors in the lost blocks are gone, so the
   * anchorer reconciles. Adapters that cannot tell leave it out; the anchorer also notices a
   * contract whose sequence went backwards.
   */
  onReset?(listener: () => void): void;
  /** The timestamp of the chain's latest block, ms since the epoch (how far behind the node is). */
  headTimestampMs?(): Promise<number>;
  check(): Promise<void>;
  close(): Promise<void>;
}

export interface SnapshotQuery {
  readonly tenantId: string;
  readonly recordId?: string;
  readonly status?: string;
  readonly limit: number;
  readonly cursor?: string;
}

/** A record's place in the pipeline, for its timeline. */
export interface RecordTrace {
  readonly ingestId: string;
  readonly tenantId: string;
  readonly database: string;
  readonly collection: string;
  readonly recordId: string;
  readonly recordVersion: string;
  readonly recordHash: string;
  readonly acceptedAtMs: number;
  readonly indexedAtMs: number;
  readonly snapshotId: string | null;
  readonly batchId: string | null;
  readonly leafIndex: number | null;
  readonly treeSize: number | null;
  readonly merkleProof: readonly string[];
}

/** Durable state of the pipeline: batches, snapshots, lifecycle and records' leaf assignments. */
export interface PipelineStore {
  /**
   * Writes formed batches: leaves, snapshots and lifecycle, then the batch rows, which commit
   * them. Idempotent (a batch written twice is stored once); a failed write may have stored some
   * of those rows, never a batch row without the rest.
   */
  saveFormedBatches(formed: readonly FormedBatch[]): Promise<void>;
  /**
   * Which of these ingestIds already belong to a stored batch. `acceptedSinceMs`: none of the
   * records was accepted before then (it bounds the search; clock skew is allowed for).
   */
  batchedIngestIds(ingestIds: readonly string[], acceptedSinceMs: number): Promise<Set<string>>;
  /** The oldest batches in this status, by creation time. */
  batchesByStatus(status: BatchStatus, limit: number): Promise<Batch[]>;
  /** The newest batches in this status, by creation time, newest first; a page starts after `olderThan`. */
  latestByStatus(status: BatchStatus, limit: number, olderThan?: BatchRef): Promise<BatchRef[]>;
  /** The anchored batch with the highest batchSeq. */
  latestAnchoredBatch(): Promise<Batch | null>;
  /** Anchored batches with a batchSeq below `beforeSeq` (all when null), highest batchSeq first. */
  anchoredBelow(beforeSeq: number | null, limit: number): Promise<BatchRef[]>;
  /** How many batches are Anchored with a batchSeq of at most this. */
  anchoredCountThrough(batchSeq: number): Promise<number>;
  /** How many batches are in each status now (for metrics). */
  countByStatus?(): Promise<Record<BatchStatus, number>>;
  getBatch(batchId: string): Promise<Batch | null>;
  putBatch(batch: Batch): Promise<void>;
  /** Several batch rows in one write. */
  putBatches(batches: readonly Batch[]): Promise<void>;
  snapshotsOfBatch(batchId: string): Promise<Snapshot[]>;
  putSnapshots(snapshots: readonly Snapshot[], lifecycle: readonly LifecycleEntry[]): Promise<void>;
  getSnapshot(tenantId: string, snapshotId: string): Promise<Snapshot | null>;
  /** A page of snapshots without their ingest ids, which a listing does not show and need not read. */
  listSnapshots(query: SnapshotQuery): Promise<{ items: ListedSnapshot[]; nextCursor: string | null }>;
  lifecycleOf(tenantId: string, snapshotId: string): Promise<LifecycleEntry[]>;
  traceRecord(tenantId: string, q: { collection: string; recordId: string; database?: string; recordVersion?: string }): Promise<RecordTrace[]>;
  /**
   * The same store with its writes fenced by a leadership term: every row written through it
   * carries `epoch`, and a row of an older epoch never replaces (nor, in a lifecycle, follows)
   * one of a newer, whatever the clocks say. Writes of a store not fenced (a retry requested
   * through the API) carry the highest epoch stored. The contract's sequence check stays the
   * primary fence of anchoring; this one keeps a stale leader's late writes from overwriting what
   * its successor recorded.
   */
  fenced(epoch: number): PipelineStore;
  /** The highest leadership epoch of the stored rows (0 before the first fenced write). */
  highestEpoch(): Promise<number>;
}

/** One term of leadership of the anchoring role (the accumulator and the anchorer). */
export interface Leadership {
  /**
   * Fencing epoch: greater for every new term, whichever process wins it (as long as the election
   * store keeps its data). The pipeline store's writes carry it (`PipelineStore.fenced`); the
   * primary fence is the contract's sequence check, which refuses a stale leader's anchor
   * whatever its epoch.
   */
  readonly epoch: number;
  /** Aborted when the term ends: the lease lapsed or was taken over, or the leader resigned. */
  readonly lost: AbortSignal;
}

/**
 * Elects the one process that accumulates and anchors among those running the anchorer role. A
 * leader stops before its lease can expire: it treats the term as lost once it has not renewed in
 * time, so two terms never overlap on the clock of the election store.
 */
export interface LeaderElector {
  /** One attempt: the new term when this process becomes leader, null when another leads. */
  tryAcquire(): Promise<Leadership | null>;
  /** Ends the current term at once, so another process takes over without waiting for the lease. */
  resign(): Promise<void>;
  check(): Promise<void>;
  close(): Promise<void>;
}

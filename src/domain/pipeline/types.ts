/** Snapshots, batches and their lifecycle (SPEC "States and transitions"; DECISIONS). */

export type SnapshotStatus = 'PendingAnchor' | 'Batched' | 'Anchored' | 'Failed';
export const SNAPSHOT_STATUSES: readonly SnapshotStatus[] = ['PendingAnchor', 'Batched', 'Anchored', 'Failed'];
export type LifecycleState = 'Ingested' | SnapshotStatus;
/** A batch waits (Pending), is anchored, or has Failed after its automatic retries. */
export type BatchStatus = 'Pending' | 'Anchored' | 'Failed';

export interface PreviousBatch {
  readonly batchId: string;
  readonly merkleRoot: string;
  readonly cid: string;
}

/** What identifies a batch on chain, read without its leaves. */
export interface BatchRef {
  readonly batchId: string;
  /** RFC 9162 root, lowercase hex. */
  readonly merkleRoot: string;
  /** Set once anchored (a retried batch gets the next free sequence). */
  readonly batchSeq: number | null;
  readonly createdAtMs: number;
}

export interface Batch extends BatchRef {
  readonly status: BatchStatus;
  readonly treeSize: number;
  /** recordHash of every leaf, in tree order. */
  readonly leaves: readonly string[];
  /** ingestId of every leaf, in tree order. */
  readonly ingestIds: readonly string[];
  readonly tenants: readonly string[];
  readonly manifestCid: string | null;
  readonly previous: PreviousBatch | null;
  readonly chainId: number | null;
  readonly contractAddress: string | null;
  readonly txHash: string | null;
  readonly blockNumber: number | null;
  readonly anchoredAtMs: number | null;
  /** Anchoring attempts since the batch was formed or last retried. */
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface Snapshot {
  readonly snapshotId: string;
  readonly tenantId: string;
  readonly batchId: string;
  readonly status: SnapshotStatus;
  readonly recordIds: readonly string[];
  readonly ingestIds: readonly string[];
  readonly recordCount: number;
  readonly snapshotHash: string;
  readonly merkleRoot: string | null;
  readonly anchorTimestampMs: number | null;
  readonly onChainConfirmed: boolean;
  readonly chainTxHash: string | null;
  readonly createdAtMs: number;
}

/** A snapshot as a listing shows it: its ingest ids (internal, as many as its records) left out. */
export type ListedSnapshot = Omit<Snapshot, 'ingestIds'>;

export interface LifecycleEntry {
  readonly snapshotId: string;
  readonly tenantId: string;
  readonly state: LifecycleState;
  readonly atMs: number;
  readonly reason: string;
  readonly attempt: number;
}

/** Where a record sits in its batch's tree. */
export interface LeafAssignment {
  readonly ingestId: string;
  readonly tenantId: string;
  readonly snapshotId: string;
  readonly batchId: string;
  readonly leafIndex: number;
  readonly treeSize: number;
  /** RFC 9162 audit path, leaf to root, lowercase hex. */
  readonly proof: readonly string[];
}

/** The IPFS manifest of a batch (DECISIONS, "IPFS manifest"). */
export interface Manifest {
  readonly hashScheme: 'dris-v1';
  readonly merkleAlgorithm: 'rfc9162-sha256';
  readonly batchId: string;
  readonly batchSeq: number;
  readonly createdAt: string;
  readonly treeSize: number;
  readonly merkleRoot: string;
  readonly previous: PreviousBatch | null;
  readonly leaves: readonly string[];
}

import type { Batch, BatchRef, BatchStatus, ListedSnapshot, Snapshot, SnapshotStatus } from '../../domain/pipeline/types.js';
import type { BatchAnchor } from '../../domain/verification/ports.js';
import { n, nn, type Int64Out } from './values.js';

/**
 * Rows of the pipeline tables (batches, snapshots) as read back, and their conversion to the
 * domain's types; and the version their writes carry (see migrations/pipeline.ts, "Leader epochs").
 */

/** A batch row without its leaves, ingest ids and tenants, which are most of its bytes. */
export interface BatchAnchorRow {
  batch_id: string;
  created_at_ms: Int64Out;
  status: string;
  tree_size: number;
  merkle_root: string;
  batch_seq: Int64Out | null;
  manifest_cid: string | null;
  prev_batch_id: string | null;
  prev_merkle_root: string | null;
  prev_cid: string | null;
  chain_id: Int64Out | null;
  contract_address: string | null;
  tx_hash: string | null;
  block_number: Int64Out | null;
  anchored_at_ms: Int64Out | null;
  attempts: number;
  last_error: string | null;
}

export interface BatchRow extends BatchAnchorRow {
  leaves: string[];
  ingest_ids: string[];
  tenants: string[];
}

export interface SnapshotRow {
  snapshot_id: string;
  tenant_id: string;
  batch_id: string;
  status: string;
  record_ids: string[];
  ingest_ids: string[];
  record_count: number;
  snapshot_hash: string;
  merkle_root: string | null;
  anchor_timestamp_ms: Int64Out | null;
  on_chain_confirmed: boolean | number;
  chain_tx_hash: string | null;
  created_at_ms: Int64Out;
}

export type ListedSnapshotRow = Omit<SnapshotRow, 'ingest_ids'>;

export const BATCH_COLUMNS = `batch_id, toUnixTimestamp64Milli(created_at) AS created_at_ms, status, tree_size, merkle_root, leaves, ingest_ids,
  tenants, batch_seq, manifest_cid, prev_batch_id, prev_merkle_root, prev_cid, chain_id, contract_address, tx_hash,
  block_number, toUnixTimestamp64Milli(anchored_at) AS anchored_at_ms, attempts, last_error`;
export const BATCH_ANCHOR_COLUMNS = `batch_id, toUnixTimestamp64Milli(created_at) AS created_at_ms, status, tree_size, merkle_root, batch_seq,
  manifest_cid, prev_batch_id, prev_merkle_root, prev_cid, chain_id, contract_address, tx_hash, block_number,
  toUnixTimestamp64Milli(anchored_at) AS anchored_at_ms, attempts, last_error`;
/** A listed snapshot's columns: all but its ingest ids, as many as its records and never shown. */
export const LISTED_SNAPSHOT_COLUMNS = `snapshot_id, tenant_id, batch_id, status, record_ids, record_count, snapshot_hash, merkle_root,
  toUnixTimestamp64Milli(anchor_timestamp) AS anchor_timestamp_ms, on_chain_confirmed, chain_tx_hash,
  toUnixTimestamp64Milli(created_at) AS created_at_ms`;
export const SNAPSHOT_COLUMNS = `${LISTED_SNAPSHOT_COLUMNS}, ingest_ids`;

export function toBatch(r: BatchRow): Batch {
  const { batchId, createdAtMs, status, treeSize, merkleRoot, ...rest } = toBatchAnchor(r);
  return { batchId, createdAtMs, status, treeSize, merkleRoot, leaves: r.leaves, ingestIds: r.ingest_ids, tenants: r.tenants, ...rest };
}

export function toBatchAnchor(r: BatchAnchorRow): BatchAnchor {
  return {
    batchId: r.batch_id,
    createdAtMs: n(r.created_at_ms),
    status: r.status as BatchStatus,
    treeSize: Number(r.tree_size),
    merkleRoot: r.merkle_root,
    batchSeq: nn(r.batch_seq),
    manifestCid: r.manifest_cid,
    previous: r.prev_batch_id === null || r.prev_merkle_root === null || r.prev_cid === null ? null : { batchId: r.prev_batch_id, merkleRoot: r.prev_merkle_root, cid: r.prev_cid },
    chainId: nn(r.chain_id),
    contractAddress: r.contract_address,
    txHash: r.tx_hash,
    blockNumber: nn(r.block_number),
    anchoredAtMs: nn(r.anchored_at_ms),
    attempts: Number(r.attempts),
    lastError: r.last_error,
  };
}

export function toSnapshot(r: SnapshotRow): Snapshot {
  return { ...toListedSnapshot(r), ingestIds: r.ingest_ids };
}

export function toListedSnapshot(r: ListedSnapshotRow): ListedSnapshot {
  return {
    snapshotId: r.snapshot_id,
    tenantId: r.tenant_id,
    batchId: r.batch_id,
    status: r.status as SnapshotStatus,
    recordIds: r.record_ids,
    recordCount: Number(r.record_count),
    snapshotHash: r.snapshot_hash,
    merkleRoot: r.merkle_root,
    anchorTimestampMs: nn(r.anchor_timestamp_ms),
    onChainConfirmed: r.on_chain_confirmed === true || r.on_chain_confirmed === 1,
    chainTxHash: r.chain_tx_hash,
    createdAtMs: n(r.created_at_ms),
  };
}

/** The narrow columns of a batch that identify it on chain. */
export interface RefRow {
  batch_id: string;
  merkle_root: string;
  batch_seq: Int64Out | null;
  created_at_ms: Int64Out;
}

export const REF_COLUMNS = 'batch_id, merkle_root, batch_seq, toUnixTimestamp64Milli(created_at) AS created_at_ms';

export function toRef(r: RefRow): BatchRef {
  return { batchId: r.batch_id, merkleRoot: r.merkle_root, batchSeq: nn(r.batch_seq), createdAtMs: n(r.created_at_ms) };
}

/** 2^64: the epoch is the high half of a version. */
const EPOCH_SHIFT = 64n;
let lastMicros = 0n;

/**
 * Microseconds now, strictly increasing within the process (a later write in the same
 * microsecond still takes a higher value), below 2^53 for years to come.
 */
export function nextMicros(): bigint {
  const now = BigInt(Date.now()) * 1000n;
  lastMicros = now > lastMicros ? now : lastMicros + 1n;
  return lastMicros;
}

/** The version of a row written in `epoch`: the epoch first, then the time (decimal text, as UInt128 takes it in JSON). */
export function epochVersion(epoch: number): string {
  return ((BigInt(epoch) << EPOCH_SHIFT) | nextMicros()).toString();
}

/** The epoch a version (as read back, a number or decimal text) was written in. */
export function epochOfVersion(version: Int64Out | null): number {
  if (version === null) return 0;
  return Number(BigInt(version) >> EPOCH_SHIFT);
}

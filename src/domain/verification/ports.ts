import type { Batch } from '../pipeline/types.js';
import type { Page, RecordEnvelope, TimeWindowQuery } from '../records/types.js';
import type { VerificationHistoryEntry } from './types.js';

/** Ports of verification, beside the pipeline's Chain and Pinner. */

/** A record as the hot index holds it, with its place in its batch's tree once batched. */
export interface StoredRecord {
  readonly ingestId: string;
  readonly clientId: string;
  readonly envelope: RecordEnvelope;
  readonly recordHash: string;
  readonly acceptedAtMs: number;
  readonly snapshotId: string | null;
  readonly batchId: string | null;
  readonly leafIndex: number | null;
  readonly treeSize: number | null;
  readonly merkleProof: readonly string[];
}

export interface RecordLookup {
  readonly tenantId: string;
  readonly collection: string;
  readonly recordId: string;
  readonly database?: string;
  readonly recordVersion?: string;
}

/** A batch as verification reads it: its state and anchor, without its leaves and ingest ids. */
export type BatchAnchor = Omit<Batch, 'leaves' | 'ingestIds' | 'tenants'>;

/** What `EvidenceIndex.prefetchRecords` brought into memory. */
export interface RecordsPrefetch {
  /** Bytes asked for. */
  readonly bytes: number;
  /** Bytes the look-ups' storage holds in all (0 where nothing is on this machine). */
  readonly tableBytes: number;
}

/** Point look-ups of the hot index for verification. */
export interface EvidenceIndex {
  /**
   * Every stored version of a record (newest acceptance last), at most 1000. Concurrent look-ups
   * may be answered by one query.
   */
  findRecord(lookup: RecordLookup): Promise<StoredRecord[]>;
  /** A batch's state and anchor; null when unknown. Concurrent look-ups may be answered by one query. */
  findBatch(batchId: string): Promise<BatchAnchor | null>;
  /** The Anchored batches of highest batchSeq, highest first, at most `limit`: what verification warms up with. */
  anchoredBatches(limit: number): Promise<BatchAnchor[]>;
  /** Reads ahead, in bulk, what answering the records of these batches needs beside each record's own row. */
  warmBatches(batchIds: readonly string[]): Promise<void>;
  /**
   * Brings into memory, up to `maxBytes`, what look-ups of records read from storage (the page
   * cache of an index whose files are on this machine); nothing where they are not.
   */
  prefetchRecords(maxBytes: number, signal?: AbortSignal): Promise<RecordsPrefetch>;
  /** Records of a tenant carrying a payloadHash or recordHash, newest first, at most `limit`. */
  findByHash(tenantId: string, kind: 'payloadHash' | 'recordHash', hash: string, limit: number): Promise<StoredRecord[]>;
  /** The canonical payload text of one accepted record; null when unknown. */
  payloadOf(tenantId: string, ingestId: string, acceptedAtMs: number): Promise<string | null>;
}

export interface HistoryQuery extends TimeWindowQuery {
  readonly recordId?: string;
  readonly collection?: string;
  readonly snapshotId?: string;
  readonly outcome?: string;
}

/** Append-only history of verification attempts. */
export interface VerificationHistory {
  append(entries: readonly VerificationHistoryEntry[]): Promise<void>;
  /** Newest first. */
  query(query: HistoryQuery): Promise<Page<VerificationHistoryEntry>>;
}

/** An Anchored event of the anchor contract, as read from the chain's logs. */
export interface AnchorEventView {
  readonly batchSeq: number;
  /** lowercase hex without 0x */
  readonly merkleRoot: string;
  readonly batchId: string;
  readonly manifestCid: string;
  readonly recordCount: number;
  /** Block timestamp, epoch seconds. */
  readonly timestampSec: number;
  readonly txHash: string;
  readonly blockNumber: number;
}

/** A block of the chain: its number and hash (lowercase hex with 0x). */
export interface BlockRef {
  readonly number: number;
  readonly hash: string;
}

/**
 * Read-only access to the anchor contract: what verification reads at verification time. Needs no
 * key, so API processes, auditors and the offline verifier use it alike.
 */
export interface ChainReader {
  readonly chainId: number;
  readonly contractAddress: string;
  /**
   * The contract's stored anchor of a root (its anchorOf view); null when the root is not on-chain.
   * Read at the head, or with `at` in exactly that block, refused (an error) once it is no longer
   * on the canonical chain.
   */
  anchorOf(merkleRoot: string, at?: BlockRef): Promise<{ readonly batchSeq: number; readonly anchoredAtSec: number } | null>;
  /** The Anchored event with this batchSeq (an indexed topic); null when none. */
  eventBySeq(batchSeq: number): Promise<AnchorEventView | null>;
  /** The Anchored event of a root (an indexed topic); null when none. */
  eventByRoot(merkleRoot: string): Promise<AnchorEventView | null>;
  /** The Anchored event naming this batchId (not indexed: a log scan); null when none. */
  eventByBatchId(batchId: string): Promise<AnchorEventView | null>;
  /** Head block number, for confirmations. */
  headBlock(): Promise<number>;
  /** The head block. */
  head(): Promise<BlockRef>;
  /** The canonical block of a number; null when the chain is not that long. */
  blockAt(blockNumber: number): Promise<BlockRef | null>;
  close(): Promise<void>;
}

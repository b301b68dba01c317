import { DrisError } from '../../errors/dris-error.js';
import type { FormedBatch } from '../../domain/pipeline/batch-formation.js';
import type { PipelineStore, RecordTrace, SnapshotQuery } from '../../domain/pipeline/ports.js';
import type { Batch, BatchRef, BatchStatus, LifecycleEntry, ListedSnapshot, Snapshot } from '../../domain/pipeline/types.js';
import type { ClickHouseDatabase } from './database.js';
import { encodeInSlices, ENCODE_SLICE_ROWS } from './encode-in-slices.js';
import { BatchTops, blockRowOf } from './batch-tops.js';
import { lookupLinesOf, LOOKUP_LINES_SETTINGS, readLookup } from './evidence-rows.js';
import {
  BATCH_COLUMNS,
  epochOfVersion,
  epochVersion,
  nextMicros,
  REF_COLUMNS,
  SNAPSHOT_COLUMNS,
  toBatch,
  toRef,
  toSnapshot,
  type BatchRow,
  type ListedSnapshotRow,
  type RefRow,
  type SnapshotRow,
} from './pipeline-rows.js';
import { SnapshotListing } from './snapshot-listing.js';
import type { SqlRunner } from './sql-runner.js';
import { Conditions, dateTime64Text, n, type Int64Out } from './values.js';

/**
 * The pipeline's state in ClickHouse, on the same engine as the hot index. Rows are replaced
 * whole with a higher version (ReplacingMergeTree) and read with FINAL; lifecycle entries are
 * appended with a deterministic id, so a retried write lists once. A record's place in its batch
 * goes to the narrow record_leaves table (without its proof) and, with the proof and the rest of
 * the record's evidence, to its record_evidence_packed row; the record row itself is the indexer's and
 * is never rewritten.
 *
 * Reads that select batches by a column that changes (status) find the ids on the narrow columns
 * first and only then read those rows whole: a batch row carries its leaves and ingest ids (tens of
 * KiB), and FINAL would otherwise read them for every batch ever formed.
 *
 * Writes carry a leadership epoch (`fenced`): batch and snapshot rows in their version's high
 * half, lifecycle entries in a column. A store not fenced (a retry requested through the API, a
 * tool) writes with the highest epoch stored, read before each write.
 */

/** Clock skew allowed between the process that accepted a record and the one that batched it. */
const BATCHED_AFTER_ACCEPTED_MARGIN_MS = 3_600_000;

/**
 * Ingest ids per look-up of batched ids: 2000 ULIDs are about 70 KB as a query parameter, well
 * inside a ClickHouse server's http_max_field_value_size (128 KiB by default).
 */
export const BATCHED_LOOKUP_CHUNK = 2_000;

export class ClickHousePipelineStore implements PipelineStore {
  readonly #database: ClickHouseDatabase;
  readonly #db: string;
  readonly #runner: SqlRunner;
  /** The leadership epoch of every write; null: the highest stored. */
  readonly #epoch: number | null;
  readonly #listing: SnapshotListing;
  readonly #tops: BatchTops;

  /** `tops`: the upper levels of batch trees, shared with the evidence store (see batch-tops.ts). */
  constructor(database: ClickHouseDatabase, epoch: number | null = null, tops: BatchTops = new BatchTops(database)) {
    this.#database = database;
    this.#tops = tops;
    this.#db = database.name;
    this.#runner = database.runner;
    if (epoch !== null && (!Number.isSafeInteger(epoch) || epoch < 0)) throw new DrisError('internal_error', 'a leadership epoch is a non-negative integer');
    this.#epoch = epoch;
    this.#listing = new SnapshotListing(this.#runner, this.#db, (rows) => this.#committed(rows));
  }

  fenced(epoch: number): ClickHousePipelineStore {
    return new ClickHousePipelineStore(this.#database, epoch, this.#tops);
  }

  async highestEpoch(): Promise<number> {
    // The highest version of each table is the highest epoch's latest write; lifecycle entries
    // are written beside snapshot rows of the same epoch.
    const rows = await this.#runner.query<{ b: Int64Out | null; s: Int64Out | null }>(
      `SELECT toString((SELECT max(version) FROM ${this.#db}.batches)) AS b, toString((SELECT max(version) FROM ${this.#db}.snapshots)) AS s`,
    );
    const r = rows[0];
    return r === undefined ? 0 : Math.max(epochOfVersion(r.b), epochOfVersion(r.s));
  }

  /** The epoch the next write carries. */
  async #writeEpoch(): Promise<number> {
    return this.#epoch ?? (await this.highestEpoch());
  }

  #batchRow(b: Batch, epoch: number): object {
    return {
      batch_id: b.batchId,
      created_at: dateTime64Text(b.createdAtMs),
      status: b.status,
      tree_size: b.treeSize,
      merkle_root: b.merkleRoot,
      leaves: b.leaves,
      ingest_ids: b.ingestIds,
      tenants: b.tenants,
      batch_seq: b.batchSeq,
      manifest_cid: b.manifestCid,
      prev_batch_id: b.previous?.batchId ?? null,
      prev_merkle_root: b.previous?.merkleRoot ?? null,
      prev_cid: b.previous?.cid ?? null,
      chain_id: b.chainId,
      contract_address: b.contractAddress,
      tx_hash: b.txHash,
      block_number: b.blockNumber,
      anchored_at: b.anchoredAtMs === null ? null : dateTime64Text(b.anchoredAtMs),
      attempts: b.attempts,
      last_error: b.lastError,
      version: epochVersion(epoch),
    };
  }

  #snapshotRow(s: Snapshot, epoch: number): object {
    return {
      tenant_id: s.tenantId,
      snapshot_id: s.snapshotId,
      batch_id: s.batchId,
      status: s.status,
      record_ids: s.recordIds,
      ingest_ids: s.ingestIds,
      record_count: s.recordCount,
      snapshot_hash: s.snapshotHash,
      merkle_root: s.merkleRoot,
      anchor_timestamp: s.anchorTimestampMs === null ? null : dateTime64Text(s.anchorTimestampMs),
      on_chain_confirmed: s.onChainConfirmed,
      chain_tx_hash: s.chainTxHash,
      created_at: dateTime64Text(s.createdAtMs),
      version: epochVersion(epoch),
    };
  }

  #lifecycleRows(entries: readonly LifecycleEntry[], epoch: number): object[] {
    return entries.map((e) => ({
      tenant_id: e.tenantId,
      snapshot_id: e.snapshotId,
      at: dateTime64Text(e.atMs),
      // Deterministic: rewriting the same transition (a re-formed batch) lists it once.
      entry_id: `${e.state}:${e.attempt}:${e.atMs}`,
      state: e.state,
      reason: e.reason,
      attempt: e.attempt,
      epoch,
    }));
  }

  saveFormedBatch(f: FormedBatch): Promise<void> {
    return this.saveFormedBatches([f]);
  }

  async saveFormedBatches(formed: readonly FormedBatch[]): Promise<void> {
    if (formed.length === 0) return;
    const epoch = await this.#writeEpoch();
    // record_leaves and record_evidence_packed keep UInt64 versions compared with the indexer's 1: time only.
    const version = Number(nextMicros());
    const leaves = formed.flatMap((f) =>
      f.assignments.map((a) => ({
        tenant_id: a.tenantId,
        ingest_id: a.ingestId,
        snapshot_id: a.snapshotId,
        batch_id: a.batchId,
        leaf_index: a.leafIndex,
        tree_size: a.treeSize,
        // The proof is in the record's evidence row, written beside: repeated here it was a third
        // of this table's bytes, inserted and merged for nothing (see record-leaves.ts).
        merkle_proof: [],
        version,
      })),
    );
    // One insert per table for all the batches; the batch rows, written last, are the commit marker.
    const evidenceParts: Buffer[] = [];
    for (const f of formed) evidenceParts.push(await encodeInSlices(f.records, ENCODE_SLICE_ROWS, (records) => lookupLinesOf(records, f.assignments, version)));
    // The block roots from which readers complete the paths record_evidence_packed keeps in part.
    const blocks = formed.flatMap((f) => blockRowOf(f.batch.batchId, f.batch.leaves) ?? []);
    await Promise.all([
      this.#runner.insertJsonEachRow(`${this.#db}.record_leaves`, leaves),
      this.#runner.insertJsonLines(`${this.#db}.record_evidence_packed`, Buffer.concat(evidenceParts), LOOKUP_LINES_SETTINGS),
      ...(blocks.length === 0 ? [] : [this.#runner.insertJsonEachRow(`${this.#db}.batch_blocks`, blocks)]),
      this.#runner.insertJsonEachRow(`${this.#db}.snapshots`, formed.flatMap((f) => f.snapshots.map((s) => this.#snapshotRow(s, epoch)))),
      this.#runner.insertJsonEachRow(`${this.#db}.snapshot_lifecycle`, this.#lifecycleRows(formed.flatMap((f) => f.lifecycle), epoch)),
    ]);
    await this.#runner.insertJsonEachRow(`${this.#db}.batches`, formed.map((f) => this.#batchRow(f.batch, epoch)));
  }

  async batchedIngestIds(ingestIds: readonly string[], acceptedSinceMs: number): Promise<Set<string>> {
    const found = new Set<string>();
    // A new leader may be handed a backlog of hundreds of thousands of ids at once; a server
    // refuses a parameter longer than its field limit (128 KiB), and the whole delivery would come
    // back again and again. One query per chunk, in turn.
    for (let i = 0; i < ingestIds.length; i += BATCHED_LOOKUP_CHUNK) {
      // Any version of a batch row lists its ingest ids (they never change), so no FINAL; and a batch
      // is formed after its records were accepted, so older batches are not read past created_at.
      const rows = await this.#runner.query<{ id: string }>(
        `SELECT DISTINCT id FROM
         (
             SELECT arrayJoin(ingest_ids) AS id FROM ${this.#db}.batches
             PREWHERE created_at >= fromUnixTimestamp64Milli({sinceMs:Int64}, 'UTC')
             WHERE hasAny(ingest_ids, {ids:Array(String)})
         )
         WHERE id IN {ids:Array(String)}`,
        { ids: ingestIds.slice(i, i + BATCHED_LOOKUP_CHUNK), sinceMs: Math.max(0, Math.trunc(acceptedSinceMs) - BATCHED_AFTER_ACCEPTED_MARGIN_MS) },
      );
      for (const r of rows) found.add(r.id);
    }
    return found;
  }

  async batchesByStatus(status: BatchStatus, limit: number): Promise<Batch[]> {
    const rows = await this.#runner.query<BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM ${this.#db}.batches FINAL
       WHERE batch_id IN (SELECT batch_id FROM ${this.#db}.batches FINAL WHERE status = {status:String} ORDER BY created_at, batch_id LIMIT {limit:UInt32})
         AND status = {status:String}
       ORDER BY created_at, batch_id`,
      { status, limit },
    );
    return rows.map(toBatch);
  }

  async latestAnchoredBatch(): Promise<Batch | null> {
    const rows = await this.#runner.query<BatchRow>(
      `SELECT ${BATCH_COLUMNS} FROM ${this.#db}.batches FINAL
       WHERE batch_id IN (SELECT batch_id FROM ${this.#db}.batches FINAL WHERE status = 'Anchored' ORDER BY batch_seq DESC LIMIT 1)
         AND status = 'Anchored'`,
    );
    return rows[0] === undefined ? null : toBatch(rows[0]);
  }

  async anchoredBelow(beforeSeq: number | null, limit: number): Promise<BatchRef[]> {
    const below = beforeSeq === null ? '' : 'AND batch_seq < {before:UInt64}';
    const rows = await this.#runner.query<RefRow>(
      `SELECT ${REF_COLUMNS} FROM ${this.#db}.batches FINAL
       WHERE status = 'Anchored' ${below}
       ORDER BY batch_seq DESC, batch_id LIMIT {limit:UInt32}`,
      { limit, ...(beforeSeq === null ? {} : { before: Math.max(0, Math.trunc(beforeSeq)) }) },
    );
    return rows.map(toRef);
  }

  async latestByStatus(status: BatchStatus, limit: number, olderThan?: BatchRef): Promise<BatchRef[]> {
    const older =
      olderThan === undefined
        ? ''
        : `AND (created_at < fromUnixTimestamp64Milli({olderMs:Int64}, 'UTC') OR (created_at = fromUnixTimestamp64Milli({olderMs:Int64}, 'UTC') AND batch_id < {olderId:String}))`;
    const rows = await this.#runner.query<RefRow>(
      `SELECT ${REF_COLUMNS} FROM ${this.#db}.batches FINAL
       WHERE status = {status:String} ${older}
       ORDER BY created_at DESC, batch_id DESC LIMIT {limit:UInt32}`,
      { status, limit, ...(olderThan === undefined ? {} : { olderMs: Math.trunc(olderThan.createdAtMs), olderId: olderThan.batchId }) },
    );
    return rows.map(toRef);
  }

  async anchoredCountThrough(batchSeq: number): Promise<number> {
    const rows = await this.#runner.query<{ c: Int64Out }>(
      `SELECT count() AS c FROM ${this.#db}.batches FINAL WHERE status = 'Anchored' AND batch_seq <= {seq:UInt64}`,
      { seq: Math.max(0, Math.trunc(batchSeq)) },
    );
    return rows[0] === undefined ? 0 : Number(rows[0].c);
  }

  async countByStatus(): Promise<Record<BatchStatus, number>> {
    const rows = await this.#runner.query<{ status: string; c: Int64Out }>(`SELECT status, count() AS c FROM ${this.#db}.batches FINAL GROUP BY status`);
    const counts: Record<BatchStatus, number> = { Pending: 0, Anchored: 0, Failed: 0 };
    for (const r of rows) if (r.status === 'Pending' || r.status === 'Anchored' || r.status === 'Failed') counts[r.status] = Number(r.c);
    return counts;
  }

  async getBatch(batchId: string): Promise<Batch | null> {
    const rows = await this.#runner.query<BatchRow>(`SELECT ${BATCH_COLUMNS} FROM ${this.#db}.batches FINAL WHERE batch_id = {batchId:String}`, { batchId });
    return rows[0] === undefined ? null : toBatch(rows[0]);
  }

  async putBatch(batch: Batch): Promise<void> {
    await this.putBatches([batch]);
  }

  async putBatches(batches: readonly Batch[]): Promise<void> {
    if (batches.length === 0) return;
    const epoch = await this.#writeEpoch();
    await this.#runner.insertJsonEachRow(`${this.#db}.batches`, batches.map((b) => this.#batchRow(b, epoch)));
  }

  async snapshotsOfBatch(batchId: string): Promise<Snapshot[]> {
    // A snapshot never changes batch, so every version of its row passes the batch_id skip index.
    const rows = await this.#runner.query<SnapshotRow>(
      `SELECT ${SNAPSHOT_COLUMNS} FROM ${this.#db}.snapshots FINAL WHERE batch_id = {batchId:String} ORDER BY tenant_id
       SETTINGS use_skip_indexes_if_final = 1`,
      { batchId },
    );
    return rows.map(toSnapshot);
  }

  async putSnapshots(snapshots: readonly Snapshot[], lifecycle: readonly LifecycleEntry[]): Promise<void> {
    if (snapshots.length === 0 && lifecycle.length === 0) return;
    const epoch = await this.#writeEpoch();
    await Promise.all([
      this.#runner.insertJsonEachRow(`${this.#db}.snapshots`, snapshots.map((s) => this.#snapshotRow(s, epoch))),
      this.#runner.insertJsonEachRow(`${this.#db}.snapshot_lifecycle`, this.#lifecycleRows(lifecycle, epoch)),
    ]);
  }

  async getSnapshot(tenantId: string, snapshotId: string): Promise<Snapshot | null> {
    const rows = await this.#runner.query<SnapshotRow>(
      `SELECT ${SNAPSHOT_COLUMNS} FROM ${this.#db}.snapshots FINAL WHERE tenant_id = {tenantId:String} AND snapshot_id = {snapshotId:String}`,
      { tenantId, snapshotId },
    );
    const row = rows[0];
    if (row === undefined || !(await this.#committed([row])).has(row.batch_id)) return null;
    return toSnapshot(row);
  }

  /**
   * Of these batch ids, those whose batch row is stored. A batch's snapshots are written before
   * its row, the commit marker; a write cut short (a crash) leaves snapshots of a batch that was
   * never stored, and when its records are formed again into a batch of other content (a timed
   * batch), those snapshots are of no batch at all. They are never shown.
   *
   * An Anchored row needs no look: the anchorer writes it only for a batch it read from the store
   * or was handed once stored, so its batch is committed. A client polling for anchored snapshots
   * then costs no look-up of batch rows.
   */
  async #committed(rows: readonly Pick<ListedSnapshotRow, 'batch_id' | 'status'>[]): Promise<Set<string>> {
    const out = new Set<string>();
    const unsure = new Set<string>();
    for (const r of rows) (r.status === 'Anchored' ? out : unsure).add(r.batch_id);
    for (const id of out) unsure.delete(id);
    if (unsure.size === 0) return out;
    const found = await this.#runner.query<{ batch_id: string }>(`SELECT DISTINCT batch_id FROM ${this.#db}.batches WHERE batch_id IN {ids:Array(String)}`, { ids: [...unsure] });
    for (const r of found) out.add(r.batch_id);
    return out;
  }

  listSnapshots(q: SnapshotQuery): Promise<{ items: ListedSnapshot[]; nextCursor: string | null }> {
    return this.#listing.list(q);
  }

  async lifecycleOf(tenantId: string, snapshotId: string): Promise<LifecycleEntry[]> {
    const rows = await this.#runner.query<{ state: string; at_ms: Int64Out; reason: string; attempt: number; epoch: Int64Out }>(
      `SELECT state, toUnixTimestamp64Milli(at) AS at_ms, reason, attempt, epoch FROM ${this.#db}.snapshot_lifecycle
       WHERE tenant_id = {tenantId:String} AND snapshot_id = {snapshotId:String}
       ORDER BY at, entry_id LIMIT 1 BY entry_id`,
      { tenantId, snapshotId },
    );
    const entries: LifecycleEntry[] = [];
    let newest = 0;
    for (const r of rows) {
      const epoch = Number(r.epoch);
      // Written by a leader whose term had already ended when a newer one wrote before it: its
      // successor's entries are the snapshot's history.
      if (epoch < newest) continue;
      newest = epoch;
      entries.push({ snapshotId, tenantId, state: r.state as LifecycleEntry['state'], atMs: n(r.at_ms), reason: r.reason, attempt: Number(r.attempt) });
    }
    return entries;
  }

  async traceRecord(tenantId: string, q: { collection: string; recordId: string; database?: string; recordVersion?: string }): Promise<RecordTrace[]> {
    const c = new Conditions(['tenant_id = {tenantId:String}'], { tenantId })
      .add('database = {database:String}', 'database', q.database)
      .add('record_version = {recordVersion:String}', 'recordVersion', q.recordVersion);
    const rows = await readLookup(this.#database, this.#tops, [{ tenantId, collection: q.collection, recordId: q.recordId }], { where: c.text(), params: c.params }, '1000');
    if (rows.length === 0) return [];
    // When each was indexed, from its record row, read by the records table's key. A record whose
    // leaf is stored but whose row the indexer has not written yet is not listed.
    const indexed = await this.#runner.query<{ ingest_id: string; indexed_at_ms: Int64Out }>(
      `SELECT ingest_id, toUnixTimestamp64Milli(min(indexed_at)) AS indexed_at_ms FROM ${this.#db}.records
       WHERE tenant_id = {tenantId:String} AND accepted_at IN {ats:Array(DateTime64(3, 'UTC'))} AND ingest_id IN {ids:Array(String)}
       GROUP BY ingest_id`,
      { tenantId, ats: [...new Set(rows.map((r) => dateTime64Text(n(r.accepted_at_ms))))], ids: rows.map((r) => r.ingest_id) },
    );
    const indexedAt = new Map(indexed.map((r) => [r.ingest_id, n(r.indexed_at_ms)]));
    const traces: RecordTrace[] = [];
    for (const r of rows) {
      const indexedAtMs = indexedAt.get(r.ingest_id);
      if (indexedAtMs === undefined) continue;
      traces.push({
        ingestId: r.ingest_id,
        tenantId: r.tenant_id,
        database: r.database,
        collection: r.collection,
        recordId: r.record_id,
        recordVersion: r.record_version,
        recordHash: r.record_hash,
        acceptedAtMs: n(r.accepted_at_ms),
        indexedAtMs,
        snapshotId: r.snapshot_id,
        batchId: r.batch_id,
        leafIndex: r.leaf_index === null ? null : Number(r.leaf_index),
        treeSize: r.tree_size === null ? null : Number(r.tree_size),
        merkleProof: r.merkle_proof,
      });
    }
    return traces;
  }
}

import type { Logger } from '../../util/logger.js';
import { ClickHouseAuditLog, type AuditWriteStats } from './audit-store.js';
import { ClickHouseDatabase, type ClickHouseDatabaseOptions } from './database.js';
import { BatchTops } from './batch-tops.js';
import { ClickHouseEvidenceStore } from './evidence-store.js';
import { IdleCompaction } from './idle-compaction.js';
import type { GroupCommitOptions } from './group-commit.js';
import { ClickHouseVerificationHistory } from './history-store.js';
import { ClickHouseKeyStore } from './key-store.js';
import { ClickHousePipelineStore } from './pipeline-store.js';
import { ClickHouseRetrievalPolicies } from './policy-store.js';
import { ClickHouseRecordStore, type RecordWriteStats } from './record-store.js';
import type { SqlRunner } from './sql-runner.js';

/**
 * Every store of one ClickHouse database, each serving one port: records (RecordIndex), keys
 * (KeyStore), audit (AuditLog), pipeline (PipelineStore), evidence (EvidenceIndex), history
 * (VerificationHistory) and policies (RetrievalPolicyStore). The composition root hands each to
 * the code that needs that port, and closes them all at once, after every user.
 */

export interface ClickHouseStorageOptions extends ClickHouseDatabaseOptions {
  /** Coalescing of record writes. */
  readonly recordWrites?: Partial<GroupCommitOptions>;
  /** Coalescing of audit appends (without a journal). */
  readonly auditWrites?: Partial<GroupCommitOptions>;
  /** Most ingest ids per existence look-up of the record writes. */
  readonly lookupChunk?: number;
  /** Merge the look-up tables into one part once writes to them stop this long (idle-compaction.ts; the embedded engine's). */
  readonly compactIdleMs?: number;
}

export type HotIndexStats = RecordWriteStats & AuditWriteStats;

export class ClickHouseStorage {
  readonly database: ClickHouseDatabase;
  readonly records: ClickHouseRecordStore;
  readonly keys: ClickHouseKeyStore;
  readonly audit: ClickHouseAuditLog;
  readonly pipeline: ClickHousePipelineStore;
  readonly evidence: ClickHouseEvidenceStore;
  readonly history: ClickHouseVerificationHistory;
  readonly policies: ClickHouseRetrievalPolicies;
  readonly #compaction: IdleCompaction | null;
  #closing: Promise<void> | null = null;

  constructor(runner: SqlRunner, options: ClickHouseStorageOptions = {}) {
    const logger: Logger | undefined = options.logger;
    const withLogger = logger === undefined ? {} : { logger };
    this.database = new ClickHouseDatabase(runner, options);
    this.records = new ClickHouseRecordStore(this.database, {
      ...withLogger,
      ...(options.recordWrites === undefined ? {} : { writes: options.recordWrites }),
      ...(options.lookupChunk === undefined ? {} : { lookupChunk: options.lookupChunk }),
    });
    this.keys = new ClickHouseKeyStore(this.database);
    this.audit = new ClickHouseAuditLog(this.database, { ...withLogger, ...(options.auditWrites === undefined ? {} : { writes: options.auditWrites }) });
    // One cache of batch trees' upper levels for both readers of record_evidence_packed.
    const tops = new BatchTops(this.database);
    this.pipeline = new ClickHousePipelineStore(this.database, null, tops);
    this.evidence = new ClickHouseEvidenceStore(this.database, { tops });
    this.history = new ClickHouseVerificationHistory(this.database);
    this.policies = new ClickHouseRetrievalPolicies(this.database);
    const idleMs = options.compactIdleMs ?? 0;
    this.#compaction = idleMs > 0 ? new IdleCompaction(this.database, { idleMs, ...(logger === undefined ? {} : { logger: logger.child({ component: 'index-compaction' }) }) }) : null;
    this.#compaction?.start();
  }

  stats(): HotIndexStats {
    return { ...this.records.stats(), ...this.audit.stats() };
  }

  /** Closes the writers, then the database (its journal copies what it holds, then the engine). */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#compaction?.stop();
      await Promise.all([this.records.close(), this.audit.close(), this.history.close()]);
      await this.database.close();
    })();
    return this.#closing;
  }
}

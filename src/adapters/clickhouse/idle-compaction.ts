import { componentLogger, type Logger } from '../../util/logger.js';
import type { ClickHouseDatabase } from './database.js';
import type { TableName } from './schema.js';
import type { Int64Out } from './values.js';

/**
 * Merges a look-up table into one part once writes to it have stopped for a while (embedded
 * engine only: the process owns its data directory, and nothing else merges for it).
 *
 * Why: a key look-up reads a granule in every part whose key range holds the key, and pays a
 * fixed cost per part besides. On a million records of record_evidence, a look-up of 40 keys cost
 * the engine 15.5 ms with the 13 parts a bulk load leaves, 10.6 ms with 3 and about 6 with one
 * (verifications/s: 1 850-2 050 against 2 500-3 200). The engine's own merge selector never
 * merges parts of such unequal sizes while no new ones come; under a steady load it keeps merging
 * as before, and this waits until the load stops, and until merging pays (worthMerging). One merge rewrites the table once (about 9 s of
 * one core per million records), on its own connection: look-ups and inserts go on meanwhile.
 */

/** Tables merged: those read by key for every verification. */
const COMPACTED: readonly TableName[] = ['record_evidence_packed'];

/** When the first look is taken after start, milliseconds (at most). */
const FIRST_CHECK_MS = 5_000;

/** How long one merge may take, milliseconds: a table of tens of millions of rows takes minutes. */
const MERGE_TIMEOUT_MS = 6 * 3_600_000;

export interface IdleCompactionOptions {
  /** How long a table's newest part must be old before its parts are merged, milliseconds. */
  readonly idleMs: number;
  /** How often tables are looked at, milliseconds. Default: a fifth of idleMs, at most a minute. */
  readonly checkEveryMs?: number;
  readonly logger?: Logger;
  readonly now?: () => number;
}

/**
 * Rows outside the largest part, as a share of it, from which a merge pays: a merge rewrites the
 * whole table, so a trickle of small writes into a large table (one more part now and then) must
 * not have it rewritten each time. The table's bytes are then rewritten at most once per tenth of
 * its size written; merges of the engine's own rewrite each row several times anyway.
 */
const MIN_SHARE_OUTSIDE_LARGEST = 0.1;

/** Parts from which a merge pays whatever their sizes: each part costs every look-up its own read. */
const MANY_PARTS = 6;

interface PartsRow {
  parts: Int64Out;
  total_rows: Int64Out;
  largest: Int64Out;
  newest: Int64Out;
  merging: Int64Out;
}

/** Whether the parts of a table are worth merging into one now. */
function worthMerging(r: PartsRow, idleMs: number, nowMs: number): boolean {
  const parts = Number(r.parts);
  if (parts <= 1 || Number(r.merging) > 0 || nowMs - Number(r.newest) * 1000 < idleMs) return false;
  return parts >= MANY_PARTS || Number(r.total_rows) - Number(r.largest) >= MIN_SHARE_OUTSIDE_LARGEST * Number(r.largest);
}

export class IdleCompaction {
  readonly #db: ClickHouseDatabase;
  readonly #idleMs: number;
  readonly #checkEveryMs: number;
  readonly #log: Logger;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(db: ClickHouseDatabase, options: IdleCompactionOptions) {
    this.#db = db;
    this.#idleMs = options.idleMs;
    this.#checkEveryMs = options.checkEveryMs ?? Math.min(60_000, Math.max(1000, Math.floor(options.idleMs / 5)));
    this.#log = options.logger ?? componentLogger('index-compaction');
    this.#now = options.now ?? Date.now;
  }

  /** Looks soon after start (a process started on a table loaded earlier), then every checkEveryMs. */
  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    this.#timer = setTimeout(() => this.#tick(), Math.min(this.#checkEveryMs, FIRST_CHECK_MS));
    this.#timer.unref();
  }

  #tick(): void {
    if (this.#stopped) return;
    this.#running = this.runOnce()
      .then(() => undefined)
      .catch((err: unknown) => this.#log.warn({ err }, 'index compaction failed; tried again later'))
      .finally(() => {
        this.#running = null;
        if (this.#stopped) return;
        this.#timer = setTimeout(() => this.#tick(), this.#checkEveryMs);
        this.#timer.unref();
      });
  }

  /**
   * Merges each table with no part newer than idleMs and none being merged, whose parts are many
   * or hold a tenth of the largest one's rows outside it. Returns the tables merged.
   */
  async runOnce(): Promise<TableName[]> {
    const merged: TableName[] = [];
    for (const table of COMPACTED) {
      if (this.#stopped) break;
      const [row] = await this.#db.runner.query<PartsRow>(
        `SELECT count() AS parts, sum(rows) AS total_rows, max(rows) AS largest, toUnixTimestamp(max(modification_time)) AS newest,
                (SELECT count() FROM system.merges WHERE database = {db:String} AND table = {table:String}) AS merging
         FROM system.parts WHERE active AND database = {db:String} AND table = {table:String}`,
        { db: this.#db.name, table },
      );
      if (row === undefined || !worthMerging(row, this.#idleMs, this.#now())) continue;
      const started = this.#now();
      // No parameters: the statement runs on a connection of its own, beside the look-ups.
      await this.#db.runner.exec(`OPTIMIZE TABLE ${this.#db.table(table)} FINAL`, undefined, { timeoutMs: MERGE_TIMEOUT_MS });
      this.#log.info({ table, parts: Number(row.parts), ms: this.#now() - started }, 'index table merged into one part after writes stopped');
      merged.push(table);
    }
    return merged;
  }

  /** Stops looking; waits for a merge under way (the engine cannot cut one short). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}

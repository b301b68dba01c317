/**
 * What a migration is, and the table settings several migrations share. Released migrations are
 * never edited: a database is upgraded by exactly the statements of the versions it lacks, so the
 * text of each stays as it was released (test/unit/clickhouse-migrations.test.ts holds it).
 */

export interface Migration {
  /** Applied in ascending order; never renumbered once released. */
  readonly version: number;
  readonly name: string;
  /** One idempotent statement. */
  readonly sql: string;
}

/**
 * Parts of record_lookup and record_evidence stay Compact (one file for all columns, a granule's
 * columns side by side) at any size a merge makes: a look-up reads every column of one granule,
 * which then costs one read instead of one per column.
 */
export const COMPACT_PARTS_UP_TO_BYTES = '1099511627776';

/**
 * verifications and audit_events take a small insert per group commit, tens a second under load:
 * merging their parts in wider steps (about ten parts of a size at once instead of five) rewrites
 * each row fewer times, at the price of a few more parts between merges.
 */
export const APPEND_ONLY_MERGE_BASE = 10;

/**
 * Engine and settings of record_lookup and record_evidence: one row per record version, found by
 * key, read a granule of `granularity` rows at a time from Compact parts.
 */
export function byRecordKey(granularity: number): string {
  return `ENGINE = ReplacingMergeTree(version)
PRIMARY KEY (tenant_id, collection, record_id)
ORDER BY (tenant_id, collection, record_id, database, record_version, ingest_id)
SETTINGS index_granularity = ${granularity}, min_bytes_for_wide_part = ${COMPACT_PARTS_UP_TO_BYTES}, merge_selector_base = 3,
         fsync_after_insert = 1, fsync_part_directory = 1`;
}

export function migration(version: number, name: string, sql: string): Migration {
  return { version, name, sql };
}

/** The settings every table takes: an insert returns once on disk (see records.ts). */
const DURABLE = 'fsync_after_insert = 1, fsync_part_directory = 1';

/** Engine clauses of a table; SETTINGS always ends with the durable ones. */
export interface TableLayout {
  readonly engine: string;
  readonly partitionBy?: string;
  readonly orderBy: string;
  /** Settings before the durable ones, e.g. `index_granularity = 128`. */
  readonly settings?: string;
}

/**
 * `CREATE TABLE IF NOT EXISTS` text as every table of this schema is laid out: the columns, given
 * as one list `name Type, ...`, one a line, indented four spaces, names padded to one past the
 * longest so that types line up; indexes (`INDEX ...` entries, after the columns) as written; then
 * the engine clauses. The text is the released statement's, byte for byte
 * (test/unit/clickhouse-migrations.test.ts).
 */
export function createTable(table: string, columns: string, layout: TableLayout | string): string {
  const tail =
    typeof layout === 'string'
      ? layout
      : [
          `ENGINE = ${layout.engine}`,
          ...(layout.partitionBy === undefined ? [] : [`PARTITION BY ${layout.partitionBy}`]),
          `ORDER BY ${layout.orderBy}`,
          `SETTINGS ${layout.settings === undefined ? DURABLE : `${layout.settings}, ${DURABLE}`}`,
        ].join('\n');
  return `CREATE TABLE IF NOT EXISTS ${table}\n(\n${columnLines(columns)}\n)\n${tail}`;
}

/** Column and index definitions, one a line (see createTable). */
function columnLines(list: string): string {
  const entries = splitTopLevel(list);
  const columns = entries.filter((e) => !e.startsWith('INDEX ')).map((e) => splitAt(e, e.indexOf(' ')));
  const width = Math.max(...columns.map(([name]) => name.length)) + 1;
  const indexes = entries.filter((e) => e.startsWith('INDEX '));
  return [...columns.map(([name, type]) => `    ${name.padEnd(width)}${type}`), ...indexes.map((e) => `    ${e}`)].join(',\n');
}

function splitAt(s: string, at: number): [string, string] {
  return [s.slice(0, at), s.slice(at + 1)];
}

/** `a, b(c, d), e` → ['a', 'b(c, d)', 'e']: commas inside parentheses or quotes do not split. */
function splitTopLevel(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === "'") quoted = !quoted;
    else if (!quoted && c === '(') depth += 1;
    else if (!quoted && c === ')') depth -= 1;
    else if (!quoted && depth === 0 && c === ',') {
      out.push(list.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(list.slice(start).trim());
  return out;
}

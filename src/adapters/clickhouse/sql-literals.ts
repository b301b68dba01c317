import { DrisError } from '../../errors/dris-error.js';
import type { SqlParamValue, SqlParams } from './sql-runner.js';

/**
 * `{name:Type}` placeholders bound on this side, as `CAST(literal AS Type)`: for an engine
 * connection that cannot take parameters (chdb-runner.ts: chDB binds parameters through one
 * process-wide chain, so only statements without them run side by side). The cast keeps the
 * placeholder's type, and the engine still folds it into a key range (checked by
 * test/integration/chdb-index.test.ts).
 *
 * The SQL is code's; values are input. A string literal is safe when its two delimiting
 * characters are escaped, `\` first; control characters are escaped too, so no byte of the value
 * reaches the parser raw that could end the statement's text early. The text is scanned once:
 * a value that looks like a placeholder is never bound again.
 */

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}/g;

export function bindLiterals(sql: string, params: SqlParams): string {
  return sql.replace(PLACEHOLDER, (_whole, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new DrisError('internal_error', `query parameter ${name} has no value`);
    return `CAST(${literal(params[name] as SqlParamValue)} AS ${type})`;
  });
}

/** A ClickHouse literal of one value. */
export function literal(value: SqlParamValue): string {
  if (value === null) return 'NULL';
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // Integers past 2^53 have already lost digits; the caller passes those as bigint or text.
      if (!Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value))) {
        throw new DrisError('internal_error', 'query parameter is not a finite number of safe precision');
      }
      return String(value);
    default:
      return `[${(value as readonly (string | number | bigint)[]).map((v) => literal(v)).join(', ')}]`;
  }
}

const ESCAPES: Readonly<Record<string, string>> = { '\\': '\\\\', "'": "\\'" };
// eslint-disable-next-line no-control-regex -- control characters are what it escapes
const SPECIAL = /[\\'\u0000-\u001f\u007f]/g;

function quote(s: string): string {
  return `'${s.replace(SPECIAL, (c) => ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
}

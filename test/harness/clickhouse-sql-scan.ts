/**
 * Just enough of ClickHouse's lexer for the HTTP bridge to answer as a server does without
 * parsing SQL: what kind of statement a text holds, whether a second statement follows (the
 * server refuses multi-statements over HTTP, chDB runs them), which output format its `FORMAT`
 * clause names, and where an INSERT's inline data begins. Strings, quoted identifiers, heredocs
 * and comments are skipped as the server's lexer skips them, so a `;` or `FORMAT` inside a value
 * never counts.
 */

export interface ScannedStatement {
  /** The first keyword in upper case ('(' for a parenthesised query, '' for no statement at all). */
  readonly kind: string;
  /** Top-level words from the start (upper case), at most a few: `USE db`, `SET a = 1`, ... */
  readonly words: readonly string[];
  /** Offset of a second statement after a top-level `;`, or -1 when there is none. */
  readonly secondStatementAt: number;
  /** The format named by the statement's own top-level `FORMAT <name>` clause, or null. */
  readonly format: string | null;
  /** For INSERT: where the inline data starts (after `FORMAT <name>` or `VALUES`), else -1. */
  readonly dataAt: number;
}

interface Token {
  readonly kind: 'word' | 'semicolon' | 'open' | 'close' | 'other';
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;
const HEREDOC_TAG = /^\$[A-Za-z0-9_]*\$/;

/** Skips a quoted run starting at `i` (the opening quote); backslash escapes and doubled quotes. */
function skipQuoted(sql: string, i: number): number {
  const quote = sql[i];
  let j = i + 1;
  while (j < sql.length) {
    const c = sql[j];
    if (c === '\\') j += 2;
    else if (c === quote) {
      if (sql[j + 1] === quote) j += 2;
      else return j + 1;
    } else j += 1;
  }
  return sql.length;
}

/** Whitespace and comments from `i`; returns where the next token starts. */
function skipBlank(sql: string, i: number): number {
  let j = i;
  while (j < sql.length) {
    const c = sql[j] ?? '';
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v') j += 1;
    else if (c === '-' && sql[j + 1] === '-') j = lineEnd(sql, j);
    else if (c === '#' && (sql[j + 1] === ' ' || sql[j + 1] === '!')) j = lineEnd(sql, j);
    else if (c === '/' && sql[j + 1] === '*') j = blockCommentEnd(sql, j);
    else break;
  }
  return j;
}

function lineEnd(sql: string, i: number): number {
  const nl = sql.indexOf('\n', i);
  return nl === -1 ? sql.length : nl + 1;
}

/** Block comments nest in ClickHouse. */
function blockCommentEnd(sql: string, i: number): number {
  let depth = 0;
  let j = i;
  while (j < sql.length) {
    if (sql[j] === '/' && sql[j + 1] === '*') {
      depth += 1;
      j += 2;
    } else if (sql[j] === '*' && sql[j + 1] === '/') {
      depth -= 1;
      j += 2;
      if (depth === 0) return j;
    } else j += 1;
  }
  return sql.length;
}

function nextToken(sql: string, from: number): Token | null {
  const start = skipBlank(sql, from);
  if (start >= sql.length) return null;
  const c = sql[start] ?? '';
  if (c === "'" || c === '"' || c === '`') return { kind: 'other', text: c, start, end: skipQuoted(sql, start) };
  if (c === '$') {
    const tag = HEREDOC_TAG.exec(sql.slice(start, start + 256))?.[0];
    if (tag !== undefined) {
      const close = sql.indexOf(tag, start + tag.length);
      return { kind: 'other', text: '$', start, end: close === -1 ? sql.length : close + tag.length };
    }
  }
  if (c === ';') return { kind: 'semicolon', text: c, start, end: start + 1 };
  if (c === '(' || c === '[' || c === '{') return { kind: 'open', text: c, start, end: start + 1 };
  if (c === ')' || c === ']' || c === '}') return { kind: 'close', text: c, start, end: start + 1 };
  if (WORD_START.test(c)) {
    let end = start + 1;
    while (end < sql.length && WORD_PART.test(sql[end] ?? '')) end += 1;
    return { kind: 'word', text: sql.slice(start, end), start, end };
  }
  let end = start + 1;
  if (/[0-9]/.test(c)) while (end < sql.length && /[0-9A-Za-z_.]/.test(sql[end] ?? '')) end += 1;
  return { kind: 'other', text: sql.slice(start, end), start, end };
}

export function scanStatement(sql: string): ScannedStatement {
  const words: string[] = [];
  let kind = '';
  let depth = 0;
  // A `FORMAT <name>` seen at the top level, kept while only SETTINGS follow it: a word called
  // `format` elsewhere (a column, an alias) is followed by more of the statement.
  let candidate: string | null = null;
  let afterSettings = false;
  let dataAt = -1;
  let ended = false;
  let previousWord = '';
  let position = 0;
  for (;;) {
    const token = nextToken(sql, position);
    if (token === null) break;
    position = token.end;
    if (ended) return { kind, words, secondStatementAt: token.start, format: candidate, dataAt };
    if (kind === '') kind = token.kind === 'open' ? token.text : token.text.toUpperCase();
    if (token.kind === 'open') depth += 1;
    else if (token.kind === 'close') depth = Math.max(0, depth - 1);
    const upper = token.kind === 'word' ? token.text.toUpperCase() : '';
    const topWord = depth === 0 && token.kind === 'word';
    if (token.kind === 'semicolon' && depth === 0) {
      ended = true;
      continue;
    }
    if (topWord && words.length < 8) words.push(upper);
    if (topWord && previousWord === 'FORMAT') {
      candidate = token.text;
      afterSettings = false;
      if (kind === 'INSERT') {
        dataAt = token.end;
        break;
      }
    } else if (candidate !== null && !afterSettings) {
      if (topWord && upper === 'SETTINGS') afterSettings = true;
      else candidate = null;
    }
    if (kind === 'INSERT' && topWord && upper === 'VALUES') {
      dataAt = token.end;
      break;
    }
    previousWord = topWord ? upper : '';
  }
  return { kind, words, secondStatementAt: -1, format: candidate, dataAt };
}

/** Statements whose result has an output format (and so an X-ClickHouse-Format header). */
export const OUTPUT_KINDS: ReadonlySet<string> = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN', 'CHECK', '(', 'FROM']);

/**
 * What a read-only request (any method but POST; the server sets readonly=2 for them) may run:
 * queries and settings changes, nothing that writes.
 */
export const READONLY_KINDS: ReadonlySet<string> = new Set(['SELECT', 'WITH', 'SHOW', 'DESCRIBE', 'DESC', 'EXISTS', 'EXPLAIN', '(', 'FROM', 'SET', 'USE']);

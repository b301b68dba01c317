/**
 * Exceptions as the ClickHouse server's HTTP interface reports them: the body
 * `Code: <n>. DB::Exception: <message>. (<NAME>) (version <v>)`, the header
 * `X-ClickHouse-Exception-Code: <n>`, and the HTTP status the server derives from the code
 * (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp in ClickHouse; everything not listed there is 500).
 * Codes and names come from the engine itself (errorCodeToName), so they are those of its version.
 */

/** An exception the bridge raises or passes on from the engine, by ClickHouse error name. */
export class ClickHouseException extends Error {
  constructor(
    readonly errorName: string,
    message: string,
    /** The engine's complete text when it came from the engine. */
    readonly engineText?: string,
    readonly engineCode?: number,
  ) {
    super(message);
  }
}

const BAD_REQUEST = [
  'BAD_ARGUMENTS',
  'CANNOT_COMPILE_REGEXP',
  'CANNOT_PARSE_TEXT',
  'CANNOT_PARSE_ESCAPE_SEQUENCE',
  'CANNOT_PARSE_QUOTED_STRING',
  'CANNOT_PARSE_DATE',
  'CANNOT_PARSE_DATETIME',
  'CANNOT_PARSE_NUMBER',
  'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
  'CANNOT_PARSE_IPV4',
  'CANNOT_PARSE_IPV6',
  'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
  'CANNOT_PARSE_UUID',
  'DUPLICATE_COLUMN',
  'ILLEGAL_COLUMN',
  'UNKNOWN_ELEMENT_IN_AST',
  'UNKNOWN_TYPE_OF_AST_NODE',
  'THERE_IS_NO_COLUMN',
  'TOO_DEEP_AST',
  'TOO_BIG_AST',
  'UNEXPECTED_AST_STRUCTURE',
  'SYNTAX_ERROR',
  'INCORRECT_DATA',
  'TYPE_MISMATCH',
  'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
];
const NOT_FOUND = [
  'UNKNOWN_TABLE',
  'UNKNOWN_FUNCTION',
  'UNKNOWN_IDENTIFIER',
  'UNKNOWN_TYPE',
  'UNKNOWN_STORAGE',
  'UNKNOWN_DATABASE',
  'UNKNOWN_SETTING',
  'UNKNOWN_DIRECTION_OF_SORTING',
  'UNKNOWN_AGGREGATE_FUNCTION',
  'UNKNOWN_FORMAT',
  'UNKNOWN_DATABASE_ENGINE',
  'UNKNOWN_TYPE_OF_QUERY',
  'UNKNOWN_ROLE',
];

const STATUS_BY_NAME: ReadonlyMap<string, number> = new Map<string, number>([
  ['REQUIRED_PASSWORD', 401],
  ...['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED'].map((n): [string, number] => [n, 403]),
  ...BAD_REQUEST.map((n): [string, number] => [n, 400]),
  ...NOT_FOUND.map((n): [string, number] => [n, 404]),
  ['QUERY_IS_TOO_LARGE', 413],
  ['NOT_IMPLEMENTED', 501],
  ['SOCKET_TIMEOUT', 503],
  ['CANNOT_OPEN_FILE', 503],
  ['CANNOT_SCHEDULE_TASK', 503],
  ['HTTP_LENGTH_REQUIRED', 411],
  ['TIMEOUT_EXCEEDED', 408],
  ['UNSUPPORTED_MEDIA_TYPE', 415],
]);

export function httpStatusOf(errorName: string): number {
  return STATUS_BY_NAME.get(errorName) ?? 500;
}

/** Error codes of the engine's version, both ways. */
export class ErrorCodes {
  readonly #byName = new Map<string, number>();
  readonly #byCode = new Map<number, string>();

  constructor(rows: readonly (readonly [number, string])[]) {
    for (const [code, name] of rows) {
      this.#byName.set(name, code);
      this.#byCode.set(code, name);
    }
  }

  /** The code of a name; STD_EXCEPTION's (1001) for a name this engine version does not know. */
  code(name: string): number {
    return this.#byName.get(name) ?? this.#byName.get('STD_EXCEPTION') ?? 1001;
  }

  name(code: number): string {
    return this.#byCode.get(code) ?? 'UNKNOWN_EXCEPTION';
  }
}

export interface ExceptionAnswer {
  readonly code: number;
  readonly name: string;
  readonly status: number;
  /** The body, one line of text ending with a newline. */
  readonly text: string;
}

const CODE_PREFIX = /Code: (\d+)\. DB::Exception: /g;
/** Trailing `. (NAME)` and `(version ...)` markers, possibly repeated by wrapping. */
const TRAILER = /(?:\.? \([A-Z0-9_]{3,}\)(?: \(version [^()]*(?:\([^()]*\))?\))?)+\s*$/;

/**
 * The exception in the server's words. An engine text keeps its message; chDB wraps some
 * exceptions in copies of themselves ("Code: 73. DB::Exception: Code: 73. ..."), which the server
 * does not, so only the innermost is kept.
 */
export function exceptionAnswer(err: unknown, codes: ErrorCodes, version: string): ExceptionAnswer {
  let name: string;
  let message: string;
  if (err instanceof ClickHouseException && err.engineText !== undefined && err.engineCode !== undefined) {
    name = codes.name(err.engineCode);
    const prefixes = [...err.engineText.matchAll(CODE_PREFIX)];
    const last = prefixes.at(-1);
    const inner = last === undefined ? err.engineText : err.engineText.slice((last.index ?? 0) + last[0].length);
    message = inner.replace(TRAILER, '');
  } else if (err instanceof ClickHouseException) {
    name = err.errorName;
    message = err.message;
  } else {
    name = 'STD_EXCEPTION';
    message = err instanceof Error ? err.message : String(err);
  }
  const code = name === 'UNKNOWN_EXCEPTION' && err instanceof ClickHouseException && err.engineCode !== undefined ? err.engineCode : codes.code(name);
  const text = `Code: ${code}. DB::Exception: ${message.replace(/\.$/, '')}. (${name}) (version ${version})\n`;
  return { code, name, status: httpStatusOf(name), text };
}

/** Reads the code from an engine error's text (`Code: 60. DB::Exception: ...`). */
export function fromEngineError(err: unknown): ClickHouseException {
  const text = err instanceof Error ? err.message : String(err);
  const code = /^Code: (\d+)\./.exec(text)?.[1];
  if (code === undefined) return new ClickHouseException('STD_EXCEPTION', text);
  return new ClickHouseException('', text, text, Number(code));
}

import t from 'tap';
import { ClickHouseException, ErrorCodes, exceptionAnswer, fromEngineError, httpStatusOf } from '../harness/clickhouse-http-errors.js';
import { classifyParams, parseMultipart, urlParams } from '../harness/clickhouse-http-request.js';
import { scanStatement } from '../harness/clickhouse-sql-scan.js';

/** The ClickHouse HTTP bridge's text handling, without an engine: statements, errors, requests. */

function errorNameOf(call: () => unknown): string | undefined {
  try {
    call();
  } catch (err) {
    return err instanceof ClickHouseException ? err.errorName : 'not a ClickHouseException';
  }
  return undefined;
}

t.test('statement kind, second statements and the FORMAT clause', (t) => {
  const cases: [string, { kind: string; second: boolean; format: string | null }][] = [
    ['SELECT 1', { kind: 'SELECT', second: false, format: null }],
    ['  select 1 \nFORMAT JSONEachRow', { kind: 'SELECT', second: false, format: 'JSONEachRow' }],
    ['SELECT 1 FORMAT JSON SETTINGS max_threads = 1', { kind: 'SELECT', second: false, format: 'JSON' }],
    ['SELECT format FROM t', { kind: 'SELECT', second: false, format: null }],
    ['SELECT * FROM (SELECT 1 FORMAT CSV)', { kind: 'SELECT', second: false, format: null }],
    ['SELECT 1;', { kind: 'SELECT', second: false, format: null }],
    ['SELECT 1; -- trailing comment\n /* block /* nested */ */', { kind: 'SELECT', second: false, format: null }],
    ['SELECT 1; SELECT 2', { kind: 'SELECT', second: true, format: null }],
    ["SELECT 'a;b', \"c;d\", `e;f`, $$g;h$$ FORMAT TSV", { kind: 'SELECT', second: false, format: 'TSV' }],
    ["SELECT 'it\\'s; ok', 'doubled '';'' quote'", { kind: 'SELECT', second: false, format: null }],
    ['-- leading\nWITH 1 AS x SELECT x', { kind: 'WITH', second: false, format: null }],
    ['(SELECT 1) UNION ALL (SELECT 2)', { kind: '(', second: false, format: null }],
    ['CREATE TABLE t (a String) ENGINE = Memory; DROP TABLE t', { kind: 'CREATE', second: true, format: null }],
    ['   ', { kind: '', second: false, format: null }],
    ['-- only a comment', { kind: '', second: false, format: null }],
  ];
  for (const [sql, want] of cases) {
    const s = scanStatement(sql);
    t.same({ kind: s.kind, second: s.secondStatementAt !== -1, format: s.format }, want, sql);
  }
  t.equal(scanStatement('SELECT 1; SELECT 2').secondStatementAt, 10);
  t.end();
});

t.test('an INSERT: where its data begins, and nothing in the data counts', (t) => {
  const fmt = 'INSERT INTO db.t (a, b) FORMAT JSONEachRow\n{"a":"x; SELECT 1","b":1}';
  const s = scanStatement(fmt);
  t.same([s.kind, s.format, s.secondStatementAt, fmt.slice(s.dataAt)], ['INSERT', 'JSONEachRow', -1, '\n{"a":"x; SELECT 1","b":1}']);
  const values = scanStatement("INSERT INTO t VALUES ('a;b'); garbage");
  t.same([values.kind, values.format, values.secondStatementAt], ['INSERT', null, -1]);
  t.equal(scanStatement('INSERT INTO t SELECT 1').dataAt, -1);
  t.same(scanStatement('USE bt').words, ['USE', 'BT']);
  t.end();
});

const codes = new ErrorCodes([
  [60, 'UNKNOWN_TABLE'],
  [62, 'SYNTAX_ERROR'],
  [73, 'UNKNOWN_FORMAT'],
  [159, 'TIMEOUT_EXCEEDED'],
  [202, 'TOO_MANY_SIMULTANEOUS_QUERIES'],
  [516, 'AUTHENTICATION_FAILED'],
  [1001, 'STD_EXCEPTION'],
  [1002, 'UNKNOWN_EXCEPTION'],
]);

t.test('exceptions in the server words, with its status', (t) => {
  const engine = fromEngineError(new Error("Code: 60. DB::Exception: Unknown table expression identifier 'nope' in scope SELECT * FROM nope. Maybe you meant system.one?. (UNKNOWN_TABLE)"));
  t.same(exceptionAnswer(engine, codes, '26.7.2.1'), {
    code: 60,
    name: 'UNKNOWN_TABLE',
    status: 404,
    text: "Code: 60. DB::Exception: Unknown table expression identifier 'nope' in scope SELECT * FROM nope. Maybe you meant system.one?. (UNKNOWN_TABLE) (version 26.7.2.1)\n",
  });
  // chDB wraps some exceptions in copies of themselves; the server sends the one.
  const wrapped = fromEngineError(
    new Error('Code: 73. DB::Exception: Code: 73. DB::Exception: Code: 73. DB::Exception: Unknown format Nope. (UNKNOWN_FORMAT) (version 26.7.2.1). (UNKNOWN_FORMAT) (version 26.7.2.1). (UNKNOWN_FORMAT)'),
  );
  t.equal(exceptionAnswer(wrapped, codes, '26.7.2.1').text, 'Code: 73. DB::Exception: Unknown format Nope. (UNKNOWN_FORMAT) (version 26.7.2.1)\n');
  const own = exceptionAnswer(new ClickHouseException('AUTHENTICATION_FAILED', 'u: Authentication failed'), codes, 'v');
  t.same([own.code, own.status, own.text], [516, 403, 'Code: 516. DB::Exception: u: Authentication failed. (AUTHENTICATION_FAILED) (version v)\n']);
  t.same([exceptionAnswer(new ClickHouseException('TIMEOUT_EXCEEDED', 'x'), codes, 'v').status, exceptionAnswer(new ClickHouseException('TOO_MANY_SIMULTANEOUS_QUERIES', 'x'), codes, 'v').status], [408, 500]);
  const unknownCode = exceptionAnswer(fromEngineError(new Error('Code: 9999. DB::Exception: odd. (SOMETHING_NEW)')), codes, 'v');
  t.same([unknownCode.code, unknownCode.name, unknownCode.status], [9999, 'UNKNOWN_EXCEPTION', 500]);
  const plain = exceptionAnswer(new Error('no code here'), codes, 'v');
  t.same([plain.code, plain.name, plain.status], [1001, 'STD_EXCEPTION', 500]);
  t.same(['SYNTAX_ERROR', 'UNKNOWN_SETTING', 'REQUIRED_PASSWORD', 'QUERY_IS_TOO_LARGE', 'NOT_IMPLEMENTED', 'HTTP_LENGTH_REQUIRED'].map(httpStatusOf), [400, 404, 401, 413, 501, 411]);
  t.end();
});

t.test('request fields: URL decoding, limits, multipart, settings', (t) => {
  t.same(urlParams('query=SELECT+1&param_x=a%27b&&flag'), [
    ['query', 'SELECT 1'],
    ['param_x', "a'b"],
    ['', ''],
    ['flag', ''],
  ]);
  t.equal(errorNameOf(() => urlParams(`param_ids=${'x'.repeat(128 * 1024 + 1)}`)), 'POCO_EXCEPTION');
  t.doesNotThrow(() => urlParams(`param_ids=${'x'.repeat(128 * 1024)}`));
  t.equal(errorNameOf(() => urlParams('x=%E0%A4%A')), 'BAD_ARGUMENTS');

  const body = Buffer.from('--B\r\nContent-Disposition: form-data; name="query"\r\n\r\nSELECT {a:String}\r\n--B\r\nContent-Disposition: form-data; name="param_a"\r\n\r\nline1\r\nline2\r\n--B--\r\n');
  t.same(parseMultipart(body, 'multipart/form-data; boundary=B'), [
    ['query', 'SELECT {a:String}'],
    ['param_a', 'line1\r\nline2'],
  ]);
  const file = Buffer.from('--B\r\nContent-Disposition: form-data; name="t"; filename="t.csv"\r\n\r\n1\r\n--B--\r\n');
  t.equal(errorNameOf(() => parseMultipart(file, 'multipart/form-data; boundary=B')), 'NOT_IMPLEMENTED');

  const p = classifyParams(
    [
      ['query', 'SELECT 1'],
      ['param_a', '1'],
      ['database', 'db'],
      ['max_threads', '2'],
      ['enable_http_compression', '1'],
      ['input_format', 'CSV'],
    ],
    true,
  );
  t.same([p.bound, p.settings, [...p.http], p.get('database')], [{ a: '1' }, [['max_threads', '2']], [['enable_http_compression', '1']], 'db']);
  t.end();
});

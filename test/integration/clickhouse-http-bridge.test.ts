import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseClientConfigOptions, type ClickHouseSettings } from '@clickhouse/client';
import t, { type Test } from 'tap';
import { startClickHouseBridge, type BridgeProcess } from '../harness/clickhouse-bridge-process.js';

/**
 * The test-only ClickHouse HTTP bridge against the real @clickhouse/client, and against plain HTTP
 * where the client hides what a server answers: parameters, formats, inserts, databases, settings,
 * sessions, compression, credentials, error codes, statuses and bodies, and its bounded queue.
 */

const bridge = await startClickHouseBridge({ users: { default: '', alice: 'wonderland' } });
t.teardown(() => bridge.stop());

const clients: ClickHouseClient[] = [];
function client(over: ClickHouseClientConfigOptions = {}, on: BridgeProcess = bridge): ClickHouseClient {
  const c = createClient({ url: on.url, request_timeout: 20_000, log: { level: ClickHouseLogLevel.OFF }, ...over });
  clients.push(c);
  return c;
}
t.teardown(async () => {
  for (const c of clients) await c.close();
});

/** Plain HTTP, to see statuses, headers and bodies as a server sends them. */
async function http(path: string, init: RequestInit = {}, on: BridgeProcess = bridge): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${on.url}${path}`, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** The ClickHouseError a call rejects with (fails the test if it resolves or throws something else). */
async function chError(t: Test, call: Promise<unknown>): Promise<ClickHouseError> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof ClickHouseError, `rejected with a ClickHouseError: ${String(err)}`);
  return err as ClickHouseError;
}

const EXCEPTION = /^Code: (\d+)\. DB::Exception: .+\. \(([A-Z_]+)\) \(version \d+\.\d+\.\d+\.\d+\)\n$/s;

t.test('ping and the static handlers', async (t) => {
  t.same(await client().ping(), { success: true });
  t.same(await client().ping({ select: true }), { success: true });
  for (const path of ['/ping', '/']) {
    const r = await http(path);
    t.same([r.status, r.text], [200, 'Ok.\n'], path);
  }
  t.equal((await http('/no/such/handler')).status, 404);
});

t.test('query parameters reach the engine as the client formats them', async (t) => {
  const s = "quote ' backslash \\ newline \n tab \t euro € end";
  const at = new Date('2025-03-01T10:00:00.123Z');
  const rs = await client().query({
    query: `SELECT {s:String} AS s, {a:Array(String)} AS a, {n:Nullable(String)} AS n, {u:UInt64} AS u, {i:Int64} AS i,
                   {d:DateTime64(3, 'UTC')} AS d, {b:Bool} AS b, {m:Map(String, UInt8)} AS m`,
    query_params: { s, a: ["x'y", 'z\\', ''], n: null, u: '18446744073709551615', i: -42, d: at, b: true, m: { k: 7 } },
    query_id: 'bridge-params-1',
    format: 'JSONEachRow',
  });
  t.same(await rs.json(), [{ s, a: ["x'y", 'z\\', ''], n: null, u: '18446744073709551615', i: '-42', d: '2025-03-01 10:00:00.123', b: true, m: { k: 7 } }]);
  t.equal(rs.query_id, 'bridge-params-1');
  t.equal(rs.response_headers['x-clickhouse-query-id'], 'bridge-params-1');
  t.equal(rs.response_headers['x-clickhouse-format'], 'JSONEachRow');
  t.match(rs.response_headers['content-type'], /^application\/x-ndjson; charset=UTF-8/);
  t.equal(rs.response_headers['x-clickhouse-timezone'], 'Etc/UTC');
  t.ok(typeof rs.response_headers['x-clickhouse-server-display-name'] === 'string');
  t.match(JSON.parse(String(rs.response_headers['x-clickhouse-summary'])), { result_rows: '1', written_rows: '0' });

  const missing = await chError(t, client().query({ query: 'SELECT {x:UInt8}', format: 'JSONEachRow' }));
  t.same([missing.code, missing.type], ['456', 'UNKNOWN_QUERY_PARAMETER']);
  const bad = await chError(t, client().query({ query: 'SELECT {x:UInt8}', query_params: { x: 'abc' }, format: 'JSONEachRow' }));
  t.same([bad.code, bad.type], ['457', 'BAD_QUERY_PARAMETER']);
});

t.test('parameters too long for the URL go as multipart fields, within the field limit', async (t) => {
  const ids = Array.from({ length: 3000 }, (_, i) => `id-${String(i).padStart(8, '0')}`);
  const query = 'SELECT length({ids:Array(String)}) AS n, {ids:Array(String)}[3000] AS last';
  for (const over of [{ use_multipart_params: true }, { use_multipart_params_auto: true }]) {
    const rows = await (await client(over).query({ query, query_params: { ids }, format: 'JSONEachRow' })).json();
    t.same(rows, [{ n: '3000', last: 'id-00002999' }]);
  }
  const huge = Array.from({ length: 12_000 }, (_, i) => `id-${String(i).padStart(8, '0')}`);
  const inUrl = await chError(t, client().query({ query, query_params: { ids: huge }, format: 'JSONEachRow' }));
  const inForm = await chError(t, client({ use_multipart_params: true }).query({ query, query_params: { ids: huge }, format: 'JSONEachRow' }));
  t.same([inUrl.code, inForm.code], ['1000', '1000'], 'a field over 128 KiB is refused, URL-encoded or not');
});

t.test('output formats and their headers', async (t) => {
  const query = 'SELECT number AS n, toString(number) AS s FROM system.numbers LIMIT 3';
  const json = (await (await client().query({ query })).json()) as { data: unknown[]; rows: number; meta: unknown[] };
  t.same([json.data, json.rows], [[{ n: '0', s: '0' }, { n: '1', s: '1' }, { n: '2', s: '2' }], 3]);
  const tsv = await client().query({ query, format: 'TabSeparated' });
  t.equal(tsv.response_headers['content-type'], 'text/tab-separated-values; charset=UTF-8');
  t.equal(await tsv.text(), '0\t0\n1\t1\n2\t2\n');
  t.equal(await (await client().query({ query, format: 'CSV' })).text(), '0,"0"\n1,"1"\n2,"2"\n');
  t.same(await (await client().query({ query, format: 'JSONCompactEachRow' })).json(), [['0', '0'], ['1', '1'], ['2', '2']]);
  // Without a FORMAT clause the answer is in default_format, else TabSeparated.
  t.equal((await http(`/?query=${encodeURIComponent('SELECT 1, 2')}`)).text, '1\t2\n');
  const r = await http(`/?default_format=JSONEachRow&query=${encodeURIComponent('SELECT 1 AS x')}`);
  t.same([r.text, r.headers.get('x-clickhouse-format')], ['{"x":1}\n', 'JSONEachRow']);
});

t.test('commands, inserts (rows, streams, compressed) and the database parameter', async (t) => {
  const c = client();
  await c.command({ query: 'CREATE DATABASE IF NOT EXISTS bt' });
  await c.command({ query: "CREATE TABLE IF NOT EXISTS bt.items (id UInt32, name String, at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY id" });
  const rows = [1, 2, 3].map((id) => ({ id, name: `item '${id}'\n`, at: '2025-03-01 10:00:00.000' }));
  const inserted = await c.insert({ table: 'bt.items', values: rows, format: 'JSONEachRow' });
  t.match(inserted.summary, { written_rows: '3' });
  const lines = Buffer.from([4].map((id) => JSON.stringify({ id, name: 'stream', at: '2025-03-01 10:00:00.000' })).join('\n'));
  await c.exec({ query: 'INSERT INTO bt.items FORMAT JSONEachRow', values: Readable.from([lines], { objectMode: false }) }).then((r) => r.stream.resume());
  await c.insert({ table: 'bt.items', values: Readable.from([{ id: 5, name: 'stream', at: '2025-03-01 10:00:00.000' }]), format: 'JSONEachRow' });
  const gz = client({ compression: { request: true, response: true } });
  await gz.insert({ table: 'bt.items', values: [{ id: 6, name: 'gzip', at: '2025-03-01 10:00:00.000' }], format: 'JSONEachRow' });
  const read = await gz.query({ query: 'SELECT id, name FROM bt.items ORDER BY id', format: 'JSONEachRow' });
  t.equal(read.response_headers['content-encoding'], 'gzip');
  t.same(await read.json(), [...rows.map(({ id, name }) => ({ id, name })), { id: 4, name: 'stream' }, { id: 5, name: 'stream' }, { id: 6, name: 'gzip' }]);

  const inDb = client({ database: 'bt' });
  t.same(await (await inDb.query({ query: 'SELECT count() AS n FROM items', format: 'JSONEachRow' })).json(), [{ n: '6' }]);
  await inDb.insert({ table: 'items', values: [{ id: 7, name: 'unqualified', at: '2025-03-01 10:00:00.000' }], format: 'JSONEachRow' });
  t.same(await (await c.query({ query: 'SELECT currentDatabase() AS d', format: 'JSONEachRow' })).json(), [{ d: 'default' }], 'the database of one request does not stay');
  const header = await http(`/?query=${encodeURIComponent('SELECT count() FROM items')}`, { headers: { 'X-ClickHouse-Database': 'bt' } });
  t.same([header.status, header.text], [200, '7\n']);
  const none = await chError(t, client({ database: 'nope' }).query({ query: 'SELECT 1' }));
  t.same([none.code, none.type], ['81', 'UNKNOWN_DATABASE']);

  const badRow = await chError(t, c.insert({ table: 'bt.items', values: [{ id: 'not a number', name: 'x', at: 'x' }], format: 'JSONEachRow' }));
  t.equal(badRow.type, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED');
  // A gzip body with the header set by hand, and a body that is not gzip at all.
  const body = gzipSync(Buffer.from('{"id":8,"name":"by hand","at":"2025-03-01 10:00:00.000"}\n'));
  const insert = `/?query=${encodeURIComponent('INSERT INTO bt.items FORMAT JSONEachRow')}`;
  t.equal((await http(insert, { method: 'POST', body, headers: { 'Content-Encoding': 'gzip' } })).status, 200);
  const broken = await http(insert, { method: 'POST', body: 'plain', headers: { 'Content-Encoding': 'gzip' } });
  t.equal(broken.headers.get('x-clickhouse-exception-code'), '354');
});

t.test('settings apply to their request only; unknown ones are refused', async (t) => {
  const c = client();
  const q = (settings: ClickHouseSettings = {}): Promise<unknown> =>
    c.query({ query: 'SELECT toUInt64(5) AS n', format: 'JSONEachRow', clickhouse_settings: settings }).then((r) => r.json());
  t.same(await q({ output_format_json_quote_64bit_integers: 0 }), [{ n: 5 }]);
  t.same(await q(), [{ n: '5' }]);
  const csv = async (settings: ClickHouseSettings = {}): Promise<string> => (await c.query({ query: 'SELECT 1, 2', format: 'CSV', clickhouse_settings: settings })).text();
  t.equal(await csv({ format_csv_delimiter: ';' }), '1;2\n');
  t.equal(await csv(), '1,2\n');
  const overflow = await chError(t, c.query({ query: 'SELECT number FROM numbers(10)', format: 'JSONEachRow', clickhouse_settings: { max_result_rows: '2', result_overflow_mode: 'throw' } }));
  t.equal(overflow.type, 'TOO_MANY_ROWS_OR_BYTES');
  t.same(await (await c.query({ query: 'SELECT count() AS n FROM (SELECT number FROM numbers(10))', format: 'JSONEachRow' })).json(), [{ n: '10' }]);
  const unknown = await chError(t, c.query({ query: 'SELECT 1', clickhouse_settings: { no_such_setting: 1 } as never }));
  t.same([unknown.code, unknown.type], ['115', 'UNKNOWN_SETTING']);
  t.equal((await http(`/?no_such_setting=1&query=SELECT%201`)).status, 404);
  t.same(await q(), [{ n: '5' }], 'a refused setting leaves nothing behind');
});

t.test('errors: codes, statuses, bodies', async (t) => {
  const c = client();
  const syntax = await chError(t, c.query({ query: 'selec 1' }));
  t.same([syntax.code, syntax.type], ['62', 'SYNTAX_ERROR']);
  const table = await chError(t, c.query({ query: 'SELECT * FROM default.no_such_table' }));
  t.same([table.code, table.type], ['60', 'UNKNOWN_TABLE']);
  const multi = await chError(t, c.command({ query: 'SELECT 1; SELECT 2' }));
  t.same([multi.code, multi.type], ['62', 'SYNTAX_ERROR']);
  await c.command({ query: 'SELECT 1;' });

  const cases: [string, RequestInit, number, string, string][] = [
    ['/?query=SELECT%20*%20FROM%20nope', {}, 404, '60', 'UNKNOWN_TABLE'],
    ['/', { method: 'POST', body: 'selec 1' }, 400, '62', 'SYNTAX_ERROR'],
    ['/', { method: 'POST', body: '' }, 400, '62', 'SYNTAX_ERROR'],
    ['/?query=CREATE%20DATABASE%20ro', {}, 500, '164', 'READONLY'],
    ['/?query=SELECT%201&compress=1', {}, 501, '48', 'NOT_IMPLEMENTED'],
    ['/?query=SELECT%201&role=admin', {}, 404, '511', 'UNKNOWN_ROLE'],
    ['/', { method: 'POST', body: 'SELECT 1', headers: { 'Content-Encoding': 'compress9' } }, 400, '36', 'BAD_ARGUMENTS'],
  ];
  for (const [path, init, status, code, name] of cases) {
    const r = await http(path, init);
    t.equal(r.status, status, `${path} status`);
    t.equal(r.headers.get('x-clickhouse-exception-code'), code, `${path} code header`);
    t.same(EXCEPTION.exec(r.text)?.slice(1), [code, name], `${path} body`);
    t.equal(r.headers.get('content-type'), 'text/plain; charset=UTF-8');
  }
  // Once compression is asked for, the error is compressed too (fetch inflates it).
  const gz = await http('/?enable_http_compression=1&query=SELECT%20*%20FROM%20nope', { headers: { 'Accept-Encoding': 'gzip' } });
  t.same([gz.status, gz.headers.get('content-encoding'), EXCEPTION.exec(gz.text)?.[1]], [404, 'gzip', '60']);
});

t.test('credentials: headers, basic auth or parameters, checked, never two at once', async (t) => {
  t.same(await (await client({ username: 'alice', password: 'wonderland' }).query({ query: 'SELECT 1 AS x', format: 'JSONEachRow' })).json(), [{ x: 1 }]);
  for (const [username, password] of [
    ['alice', 'wrong'],
    ['mallory', ''],
  ] as const) {
    const denied = await chError(t, client({ username, password }).query({ query: 'SELECT 1' }));
    t.same([denied.code, denied.type], ['516', 'AUTHENTICATION_FAILED']);
  }
  const basic = `Basic ${Buffer.from('alice:wonderland').toString('base64')}`;
  const ok: RequestInit[] = [{ headers: { 'X-ClickHouse-User': 'alice', 'X-ClickHouse-Key': 'wonderland' } }, { headers: { Authorization: basic } }];
  for (const init of ok) t.equal((await http('/?query=SELECT%201', init)).text, '1\n');
  t.equal((await http('/?user=alice&password=wonderland&query=SELECT%201')).text, '1\n');
  const refused: [string, RequestInit][] = [
    ['/?query=SELECT%201', { headers: { 'X-ClickHouse-User': 'alice', 'X-ClickHouse-Key': 'nope' } }],
    ['/?user=alice&query=SELECT%201', { headers: { Authorization: basic } }],
    ['/?query=SELECT%201', { headers: { 'X-ClickHouse-User': 'alice', 'X-ClickHouse-Key': 'wonderland', Authorization: basic } }],
    ['/?query=SELECT%201', { headers: { Authorization: 'Bearer token' } }],
  ];
  for (const [path, init] of refused) {
    const r = await http(path, init);
    t.same([r.status, r.headers.get('x-clickhouse-exception-code')], [403, '516']);
  }
});

t.test('sessions keep SET and USE for their requests only', async (t) => {
  const inSession = client({ session_id: 'bridge-session-1' });
  await inSession.command({ query: 'SET max_threads = 3' });
  await inSession.command({ query: 'USE bt' });
  const seen = async (c: ClickHouseClient): Promise<unknown> =>
    (await c.query({ query: "SELECT getSetting('max_threads') AS m, currentDatabase() AS d", format: 'JSONEachRow' })).json();
  t.same(await seen(inSession), [{ m: '3', d: 'bt' }]);
  t.notSame(await seen(client()), [{ m: '3', d: 'bt' }]);
  t.same((await seen(client({ session_id: 'bridge-session-2' })) as { d: string }[])[0]?.d, 'default');
  const r = await http('/?session_id=never-seen&session_check=1&query=SELECT%201');
  t.same([r.status, r.headers.get('x-clickhouse-exception-code')], [500, '372']);
  t.equal((await http('/?session_id=x&session_timeout=forever&query=SELECT%201')).headers.get('x-clickhouse-exception-code'), '374');
});

t.test('one statement at a time: a bounded queue, deadlines and query ids', async (t) => {
  const small = await startClickHouseBridge({ maxQueries: 2, statementTimeoutMs: 1500 });
  t.teardown(() => small.stop());
  const answers = await Promise.all(Array.from({ length: 8 }, () => http('/?query=SELECT%20sleep(0.2)', {}, small)));
  const codes = answers.map((a) => (a.status === 200 ? 'ok' : a.headers.get('x-clickhouse-exception-code')));
  t.ok(codes.filter((c) => c === 'ok').length >= 2, `answered: ${codes.join(' ')}`);
  t.ok(codes.filter((c) => c === '202').length >= 1, 'refused beyond the queue with TOO_MANY_SIMULTANEOUS_QUERIES');
  t.same([...new Set(codes)].sort(), ['202', 'ok']);

  const slow = http('/?query_id=same-id&query=SELECT%20sleep(1)', {}, small);
  await new Promise((r) => setTimeout(r, 200));
  const twin = await http('/?query_id=same-id&query=SELECT%201', {}, small);
  t.equal(twin.headers.get('x-clickhouse-exception-code'), '216', 'QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING');
  t.equal((await slow).status, 200);

  const late = await http('/?query=SELECT%20sleep(2)', {}, small);
  t.same([late.status, late.headers.get('x-clickhouse-exception-code')], [408, '159']);
  // The engine finishes what it started; the next statement runs after it.
  t.equal((await http('/?query=SELECT%2042', {}, small)).text, '42\n');
});

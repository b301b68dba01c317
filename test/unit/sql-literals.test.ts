import t from 'tap';
import { bindLiterals, literal } from '../../src/adapters/clickhouse/sql-literals.js';

void t.test('placeholders become typed literals', (t) => {
  t.equal(
    bindLiterals('SELECT * FROM t WHERE a = {a:String} AND b IN {ids:Array(String)} LIMIT {n:UInt32}', { a: 'x', ids: ['p', 'q'], n: 5 }),
    "SELECT * FROM t WHERE a = CAST('x' AS String) AND b IN CAST(['p', 'q'] AS Array(String)) LIMIT CAST(5 AS UInt32)",
  );
  t.equal(bindLiterals('fromUnixTimestamp64Milli({ms:Int64})', { ms: 1_700_000_000_000 }), 'fromUnixTimestamp64Milli(CAST(1700000000000 AS Int64))');
  t.equal(bindLiterals('{v:UInt64}', { v: 18_446_744_073_709_551_615n }), 'CAST(18446744073709551615 AS UInt64)');
  t.equal(bindLiterals('{hs:Array(UInt64)}', { hs: [18_446_744_073_709_551_615n, 1n] }), 'CAST([18446744073709551615, 1] AS Array(UInt64))', 'integers past 2^53 in an array');
  t.equal(bindLiterals('{b:Bool}, {n:Nullable(String)}, {e:Array(String)}', { b: true, n: null, e: [] }), 'CAST(true AS Bool), CAST(NULL AS Nullable(String)), CAST([] AS Array(String))');
  t.equal(bindLiterals('SELECT 1', {}), 'SELECT 1', 'no placeholder, no change');
  t.end();
});

void t.test('strings cannot leave their quotes', (t) => {
  t.equal(literal("a'b"), "'a\\'b'");
  t.equal(literal('a\\'), "'a\\\\'", 'a trailing backslash does not escape the closing quote');
  t.equal(literal("\\' OR 1=1 --"), "'\\\\\\' OR 1=1 --'");
  t.equal(literal('\u0000;\n\r\t\u001f\u007f'), "'\\x00;\\x0a\\x0d\\x09\\x1f\\x7f'", 'control characters as escapes');
  t.equal(literal('é漢🙂'), "'é漢🙂'", 'text past ASCII as is');
  t.end();
});

void t.test('a value that looks like a placeholder is not bound again', (t) => {
  t.equal(bindLiterals('{a:String} {b:String}', { a: '{b:String}', b: 'x' }), "CAST('{b:String}' AS String) CAST('x' AS String)");
  t.end();
});

void t.test('a placeholder without a value or a number without precision is refused', (t) => {
  t.throws(() => bindLiterals('{a:String}', {}), { code: 'internal_error' });
  t.throws(() => bindLiterals('{a:String}', Object.create({ a: 'inherited' }) as Record<string, string>), { code: 'internal_error' }, 'only own values');
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53 + 2]) t.throws(() => literal(bad), { code: 'internal_error' }, String(bad));
  t.equal(literal(-1.5), '-1.5');
  t.end();
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// The test command's digest of failed points (scripts/tap-failures.mjs), read from a TAP log.
const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/tap-failures.mjs');
const digest = (log: string): { status: number | null; stdout: string } => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'tap-failures-')), 'log');
  writeFileSync(file, log);
  const r = spawnSync(process.execPath, [script, file], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout };
};

const nestedFailure = [
  'TAP version 14',
  '# Subtest: dist/test/unit/a.test.js',
  '    # Subtest: outer',
  '        # Subtest: inner',
  '            not ok 1 - one is two',
  '              ---',
  '              compare: ===',
  '              ...',
  '            ',
  '            ok 2 - fine',
  '            1..2',
  '        not ok 1 - inner # time=3ms',
  '          ---',
  '          at: here',
  '          ...',
  '        1..1',
  '    not ok 1 - outer # time=4ms',
  '      ---',
  '      at: there',
  '      ...',
  '    1..1',
  '    # time=5ms',
  'not ok 1 - dist/test/unit/a.test.js # time=5ms',
  '  ---',
  '  exitCode: 1',
  '  ...',
  '# Subtest: dist/test/unit/b.test.js',
  '    ok 1 - b',
  '    1..1',
  'ok 2 - dist/test/unit/b.test.js',
  '# Subtest: dist/test/unit/c.test.js',
  '    # Subtest: quiet',
  '        ok 1 - passes',
  '        1..1',
  '    ok 1 - quiet',
  '    1..1',
  '    # time=1ms',
  'not ok 3 - dist/test/unit/c.test.js # time=9ms',
  '  ---',
  '  exitCode: 3',
  '  ...',
  '# { total: 5, pass: 3, fail: 2 }',
].join('\n');

void t.test('a failed point is listed once, with its subtest path and diagnostics', (t) => {
  const r = digest(nestedFailure);
  t.equal(r.status, 0);
  const listed = r.stdout.split('\n').filter((l) => l.startsWith('not ok: '));
  t.same(listed, [
    'not ok: dist/test/unit/a.test.js > outer > inner > one is two',
    'not ok: dist/test/unit/c.test.js # time=9ms',
  ], 'the innermost failure, and a file that failed with no failed point inside');
  t.match(r.stdout, /^# failures \(2\):/);
  t.match(r.stdout, /compare: ===/);
  t.match(r.stdout, /exitCode: 3/);
  t.notMatch(r.stdout, /at: there/, 'the parents repeating a failure are left out');
  t.end();
});

void t.test('a run without failures prints nothing', (t) => {
  const r = digest('TAP version 14\nok 1 - a\n1..1\n# { total: 1, pass: 1, fail: 0 }\n');
  t.equal(r.status, 0);
  t.equal(r.stdout, '');
  t.end();
});

void t.test('many failures are capped, and the count says so', (t) => {
  const log = Array.from({ length: 30 }, (_, i) => `not ok ${i + 1} - point ${i}\n  ---\n  n: ${i}\n  ...`).join('\n');
  const r = digest(log);
  t.match(r.stdout, /^# failures \(30, the first 20 shown\):/);
  t.equal(r.stdout.split('\n').filter((l) => l.startsWith('not ok: ')).length, 20);
  t.end();
});

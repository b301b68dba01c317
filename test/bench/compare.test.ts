import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { compareResults } from '../../bench/lib/compare.js';
import { EXIT_REGRESSION } from '../../bench/lib/refusal.js';
import { benchMainJs, syntheticResult, writeResultFile } from './fixtures.js';

const dir = mkdtempSync(path.join(tmpdir(), 'dris-bench-compare-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const compare = (...args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [benchMainJs, 'compare', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

t.test('a result compared with itself exits 0 and reports no regression', (t) => {
  const a = writeResultFile(dir, 'base.json', syntheticResult(1));
  const r = compare(a, a);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /no figure regressed by more than 10 %/);
  t.match(r.stdout, /embedded single: records\/s\s+records\/s\s+3,000\s+3,000\s+\+0\.0 %/);
  t.end();
});

t.test('a synthetic 20 % regression exits non-zero and names the figures', (t) => {
  const a = writeResultFile(dir, 'base.json', syntheticResult(1));
  const b = writeResultFile(dir, 'slower.json', syntheticResult(0.8));
  const r = compare(a, b);
  t.equal(r.status, EXIT_REGRESSION, r.stderr);
  t.match(r.stdout, /records\/s.*-20\.0 %.*REGRESSION/);
  t.match(r.stdout, /p99 latency.*\+25\.0 %.*REGRESSION/);
  t.match(r.stdout, /2 figure\(s\) regressed by more than 10 %/);
  t.equal(compare(a, b, '--threshold', '30').status, 0, 'within a 30 % threshold');
  t.equal(compare(b, a).status, 0, 'the other way round it is an improvement');
  t.end();
});

t.test('the direction of each figure decides what a regression is', (t) => {
  const base = syntheticResult(1);
  const c = compareResults(base, syntheticResult(1.2), 10);
  t.equal(c.regressions, 0);
  t.ok(c.rows.every((r) => !r.regressed));
  const worse = compareResults(base, syntheticResult(0.85), 10);
  t.same(worse.rows.map((r) => [r.key, r.regressed]), [
    ['embedded.single.recordsPerSec', true],
    ['embedded.single.p99Ms', true],
  ]);
  t.end();
});

t.test('environment differences are listed and unmatched figures named', (t) => {
  const a = syntheticResult(1);
  const b = syntheticResult(1);
  const changed = { ...b, environment: { ...b.environment, cores: 8, hashBackend: { bench: 'wasm', service: 'wasm' } }, headline: [...b.headline, { key: 'new.figure', label: 'new', value: 1, unit: 'x', better: 'higher' as const }] };
  const c = compareResults(a, changed, 10);
  t.ok(c.environmentNotes.some((n) => n.startsWith('cores differs: 2 -> 8')));
  t.ok(c.environmentNotes.some((n) => n.startsWith('service hash backend differs: native -> wasm')));
  t.same(c.unmatched, ['new.figure']);
  t.end();
});

t.test('another build started as the service under test is named by its commit', (t) => {
  const a = syntheticResult(1);
  const b = syntheticResult(1);
  const older = { ...a, environment: { ...a.environment, serviceCli: { path: '/old/dist/src/cli/dris.js', commit: 'aaaaaaaaaaaa' } } };
  const c = compareResults(older, b, 10);
  t.ok(c.environmentNotes.includes(`service under test differs: aaaaaaaaaaaa -> ${b.environment.commit ?? ''}`));
  t.same(compareResults(a, b, 10).environmentNotes, [], 'one build on both sides: nothing to say');
  t.end();
});

t.test('a file that is not a bench result is refused with exit 2', (t) => {
  const bad = writeResultFile(dir, 'bad.json', { hello: 1 } as never);
  const r = compare(bad, bad);
  t.equal(r.status, 2);
  t.match(r.stderr, /is not a dris bench result/);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  t.equal(compare(bad).status, 2, 'one file only');
  t.end();
});

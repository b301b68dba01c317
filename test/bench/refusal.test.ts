import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { benchMainJs } from './fixtures.js';

/** The bench refuses clearly before starting anything: exit 2, what is missing, how to get it. */

const empty = mkdtempSync(path.join(tmpdir(), 'dris-bench-tools-'));
t.teardown(() => rmSync(empty, { recursive: true, force: true }));

const bench = (args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [benchMainJs, ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

t.test('missing nats-server and redis-server: refused with how to install each', (t) => {
  // No tools cache and an empty PATH (node is started by its absolute path): neither server can be found.
  const r = bench(['ingest', '--modes', 'nats-redis', '--duration', '1'], { DRIS_TOOLS_DIR: empty, PATH: empty });
  t.equal(r.status, 2, r.stderr);
  t.match(r.stderr, /^bench: refused: missing nats-server \(for the NATS JetStream queue\), redis-server \(for the Redis admission store\)/);
  t.match(r.stderr, /nats-server: bash scripts\/tools\.sh nats/);
  t.match(r.stderr, /redis-server: apt-get install -y redis-server/);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  t.equal(r.stdout, '', 'nothing measured');
  t.end();
});

t.test('a fallback hashing backend is refused unless --allow-fallback', (t) => {
  const r = bench(['ingest', '--duration', '1'], { DRIS_NATIVE_ADDON: path.join(empty, 'absent.node') });
  t.equal(r.status, 2, r.stderr);
  t.match(r.stderr, /refused: the native hashing backend is not available here .*slower wasm fallback/);
  t.match(r.stderr, /npm run build:native/);
  t.match(r.stderr, /--allow-fallback/);
  const hash = bench(['hash', '--quick'], { DRIS_NATIVE_ADDON: path.join(empty, 'absent.node') });
  t.equal(hash.status, 2, 'the hash scenario refuses too');
  t.end();
});

t.test('bad options and unknown scenarios are refused with exit 2, help exits 0', (t) => {
  for (const args of [['ingest', '--durration', '5'], ['ingest', '--duration', 'x'], ['ingest', '--modes', 'kafka'], ['nosuch'], ['ingest', 'stray']]) {
    const r = bench(args);
    t.equal(r.status, 2, args.join(' '));
    t.match(r.stderr, /^bench: refused: /, args.join(' '));
  }
  const help = bench(['--help']);
  t.equal(help.status, 0);
  for (const name of ['ingest', 'pipeline', 'verify', 'hash', 'cluster']) t.match(help.stdout, new RegExp(`\\n  ${name} `), `lists ${name}`);
  const ingest = bench(['ingest', '--help']);
  t.equal(ingest.status, 0);
  for (const opt of ['--rate', '--sweep', '--modes', '--duration', '--warmup', '--compare', '--html', '--allow-fallback']) t.match(ingest.stdout, opt);
  t.end();
});

import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { headlineTable } from '../../bench/cli.js';
import { classifyFleetProcess } from '../../bench/lib/cluster-fleet.js';
import { compareResults } from '../../bench/lib/compare.js';
import { parseOptions } from '../../bench/lib/options.js';
import { parseStat, readRoles, roleCosts } from '../../bench/lib/process-cpu.js';
import { isBenchRefusal } from '../../bench/lib/refusal.js';
import { loadScenarios } from '../../bench/lib/registry.js';
import { renderHtml } from '../../bench/lib/report/html.js';
import type { Scenario } from '../../bench/lib/scenario.js';
import { syntheticClusterResult } from './fixtures.js';

/** The cluster scenario without a fleet: its options, its plan, its result's rendering, its CPU readings. */

async function cluster(): Promise<Scenario> {
  const s = (await loadScenarios()).find((x) => x.name === 'cluster');
  if (s === undefined) throw new Error('no cluster scenario');
  return s;
}

t.test('the registry lists cluster after the single-service scenarios, needing the fleet\'s tools', async (t) => {
  const names = (await loadScenarios()).map((s) => s.name);
  t.ok(names.indexOf('cluster') > names.indexOf('hash'), `cluster listed after hash (${names.join(', ')})`);
  const s = await cluster();
  t.same((s.requirements?.({}) ?? []).map((r) => r.name), ['nats-server', 'redis-server', 'haproxy', 'ipfs (Kubo)']);
  for (const opt of ['variants', 'bulk-size', 'api', 'indexers', 'anchorers', 'rate', 'sweep', 'knee-latency', 'floor-in-flight', 'poll-ms']) t.ok(s.options.some((o) => o.name === opt), `--${opt}`);
  t.notOk(s.options.some((o) => o.name === 'pin'), 'no --pin: the fleet is not pinned');
});

t.test('options: defaults of a 2/2/2 fleet, scaling and the load accepted, bad values refused', async (t) => {
  const s = await cluster();
  const d = parseOptions([], s.options).values;
  t.same([d['api'], d['indexers'], d['anchorers']], [2, 2, 2]);
  t.same(d['variants'], ['single', 'bulk']);
  t.equal(d['knee-latency'], 'request');
  t.equal(d['rate'], undefined, 'closed loop by default');
  const p = parseOptions(['--api', '3', '--indexers', '1', '--anchorers', '1', '--variants', 'bulk', '--rate', '2000', '--knee-latency', 'anchored'], s.options).values;
  t.same([p['api'], p['indexers'], p['anchorers'], p['rate'], p['knee-latency']], [3, 1, 1, 2000, 'anchored']);
  t.same(p['variants'], ['bulk']);
  t.same(parseOptions(['--sweep', '1000,2000'], s.options).values['sweep'], [1000, 2000]);
  for (const bad of [['--api', '0'], ['--api', '9'], ['--indexers', '1.5'], ['--variants', 'kafka'], ['--knee-latency', 'p50'], ['--bulk-size', '1001'], ['--pin']]) {
    try {
      parseOptions(bad, s.options);
      t.fail(`${bad.join(' ')} accepted`);
    } catch (e) {
      t.ok(isBenchRefusal(e), `${bad.join(' ')} refused`);
    }
  }
});

t.test('the plan: fleet start, every floor, each variant\'s load or sweep steps, the stop', async (t) => {
  const s = await cluster();
  const keys = (argv: string[]): string[] => s.plan(parseOptions(argv, [...s.options, { name: 'duration', kind: 'number', default: 10, help: '' }, { name: 'warmup', kind: 'number', default: 2, min: 0, help: '' }, { name: 'floor-seconds', kind: 'number', default: 3, help: '' }]).values).map((p) => p.key);
  t.same(keys([]), ['start', 'floor.jetstream.single', 'floor.jetstream.bulk', 'floor.clickhouse', 'floor.anvil', 'floor.http.single', 'floor.http.bulk', 'single', 'bulk', 'stop']);
  t.same(keys(['--variants', 'bulk', '--sweep', '1000,2000']), ['start', 'floor.jetstream.bulk', 'floor.clickhouse', 'floor.anvil', 'floor.http.bulk', 'bulk.sweep0', 'bulk.sweep1', 'stop']);
});

t.test('a cluster result renders: figures beside both floors, 202 -> Anchored and CPU per role in the report', (t) => {
  const r = syntheticClusterResult(1);
  const text = headlineTable(r);
  t.match(text, /bulk: ingest records\/s through HAProxy\s+5,000\s+records\/s\s+bare uWebSockets\.js behind HAProxy, bulk\s+100,000 records\/s\s+5\.0 %/);
  t.match(text, /\n\s+raw JetStream publish \(R3\), 500 record\(s\)\/message\s+40,000 records\/s\s+13 %/);
  t.match(text, /bulk: anchored records\/s .*raw insert through the ClickHouse HTTP interface\s+80,000 records\/s\s+5\.0 %/);
  t.match(text, /bulk: api CPU per 1000 records\s+0\.050\s+CPU s/);
  const html = renderHtml(r);
  t.match(html, /<h1>dris bench: cluster<\/h1>/);
  t.match(html, /13 % of raw JetStream publish \(R3\), 500 record\(s\)\/message \(40,000 records\/s\)/);
  t.match(html, /<td>cpuSecondsPer1000Records\.api<\/td><td class="n">0\.05<\/td>/);
  t.match(html, /202 -&gt; Anchored \(from intended send\)/);
  t.ok((html.match(/<svg [^>]*class="chart"/g) ?? []).length >= 4, 'latency over time, answers per second and distribution are drawn');
  t.end();
});

t.test('--compare on cluster results: itself passes, a 20 % slower fleet (more CPU per record) regresses', (t) => {
  const base = syntheticClusterResult(1);
  t.equal(compareResults(base, base, 10).regressions, 0);
  const worse = compareResults(base, syntheticClusterResult(0.8), 10);
  t.same(
    worse.rows.filter((r) => r.regressed).map((r) => r.key),
    ['bulk.recordsPerSec', 'bulk.p99Ms', 'bulk.anchoredRecordsPerSec', 'bulk.ingestToAnchoredP99Ms', 'bulk.cpuPer1000.api', 'bulk.cpuPer1000.fleet'],
  );
  t.end();
});

t.test('the fleet\'s servers are told apart by their command lines', (t) => {
  t.equal(classifyFleetProcess('/home/u/.cache/dris-tools/bin/nats-server -c /tmp/f/nats-1/nats-server.conf'), 'nats');
  t.equal(classifyFleetProcess('/usr/bin/redis-server 127.0.0.1:4000'), 'redis');
  t.equal(classifyFleetProcess('/usr/bin/node /r/dist/test/harness/clickhouse-http-bridge-main.js --path x'), 'clickhouse bridge');
  t.equal(classifyFleetProcess('/home/u/.cache/dris-tools/bin/ipfs daemon --offline'), 'kubo');
  t.equal(classifyFleetProcess('/r/node_modules/@foundry-rs/anvil-linux-x64/bin/anvil --port 0'), 'anvil');
  t.equal(classifyFleetProcess('/usr/sbin/haproxy -db -f /tmp/h/haproxy.cfg'), 'haproxy');
  t.equal(classifyFleetProcess('/usr/bin/node /r/dist/src/cli/dris.js serve'), null);
  t.end();
});

t.test('/proc readings: a stat line with spaces in the name, costs per 1000 records between two readings', (t) => {
  const line = '4242 (node worker (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 11 0 123 1000000 2560 18446744073709551615';
  t.same(parseStat(line, 100, 4096), { ppid: 17, cpuSec: 3, rssBytes: 2560 * 4096 });
  t.equal(parseStat('garbage', 100, 4096), null);
  const before = new Map([['api', { processes: 2, cpuSec: 10, rssBytes: 0 }]]);
  const after = new Map([
    ['api', { processes: 2, cpuSec: 16, rssBytes: 200 * 2 ** 20 }],
    ['nats', { processes: 3, cpuSec: 1.5, rssBytes: 0 }],
  ]);
  t.same(roleCosts(before, after, 20, 12_000), [
    { role: 'api', processes: 2, cpuSec: 6, cpuSecPer1000: 0.5, cores: 0.3, rssMiB: 200 },
    { role: 'nats', processes: 3, cpuSec: 1.5, cpuSecPer1000: 0.125, cores: 0.08, rssMiB: 0 },
  ]);
  t.end();
});

t.test('readRoles finds a child by its command line and counts its CPU', async (t) => {
  // A child that spins for 300 ms, then idles until killed (bounded: it exits by itself after 20 s).
  const child = spawn(process.execPath, ['-e', 'const e = Date.now() + 300; while (Date.now() < e); setTimeout(() => {}, 20000);', 'cpu-burner-for-test']);
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  await sleep(800);
  const roles = readRoles({ roots: [], under: process.pid, classify: (cmd) => (cmd.includes('cpu-burner-for-test') ? 'burner' : null), selfRole: 'me' });
  const burner = roles.get('burner');
  t.equal(burner?.processes, 1);
  t.ok((burner?.cpuSec ?? 0) > 0, `the child's CPU is counted (${burner?.cpuSec} s)`);
  t.ok((burner?.rssBytes ?? 0) > 0, 'and its memory');
  t.equal(roles.get('me')?.processes, 1, 'the test process itself, under its own role');
  const byRoot = readRoles({ roots: [{ role: 'known', pid: child.pid ?? -1 }], under: process.pid, classify: (cmd) => (cmd.includes('cpu-burner-for-test') ? 'burner' : null) });
  t.equal(byRoot.get('known')?.processes, 1, 'a root process takes its role from the caller');
  t.equal(byRoot.get('burner'), undefined);
});

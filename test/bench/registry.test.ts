import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadScenarios } from '../../bench/lib/registry.js';

t.test('the scenarios of bench/scenarios are found, in order, each with a plan and options', async (t) => {
  const found = await loadScenarios();
  const names = found.map((s) => s.name);
  t.same(names.slice(0, 5), ['ingest', 'pipeline', 'verify', 'hash', 'cluster']);
  for (const s of found) {
    t.ok(s.summary.length > 0 && s.description.length > 0, `${s.name} describes itself`);
    t.ok(new Set(s.options.map((o) => o.name)).size === s.options.length, `${s.name}: option names unique`);
  }
});

t.test('a new scenario is one more file in the directory', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-bench-registry-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(
    path.join(dir, 'cluster.js'),
    `export const scenario = { name: 'cluster', order: 50, summary: 's', description: 'd', options: [], defaults: { duration: 1, warmup: 0, p99BoundMs: 1 }, plan: () => [], run: async () => ({}) };\n`,
  );
  writeFileSync(path.join(dir, 'helper.js'), 'export const notAScenario = 1;\n');
  // ES modules by declaration, as bench/ is: left to syntax detection, a loader hook may take them for CommonJS.
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(path.join(dir, 'notes.txt'), 'ignored\n');
  const found = await loadScenarios(dir);
  t.same(found.map((s) => s.name), ['cluster']);
});

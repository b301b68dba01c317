import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { repoRoot } from '../harness/service.js';
import {
  catalogueMetricOf,
  deployDir,
  deployTools,
  markdownAnchors,
  METRICS_CATALOGUE,
  OTHER_SERIES,
  readYaml,
  run,
  seriesIn,
} from '../harness/deploy-tools.js';

/**
 * deploy/prometheus and deploy/grafana: the alert rules pass `promtool check rules` and their unit
 * tests, use only catalogue metrics and link an existing runbook section; the compose Prometheus
 * configuration passes `promtool check config`; the dashboard covers the catalogue with parseable
 * queries; check-metrics.sh runs `promtool check metrics` on files and URLs.
 */

const promDir = path.join(deployDir, 'prometheus');
const alertsFile = path.join(promDir, 'alerts.yaml');
const dashboardFile = path.join(deployDir, 'grafana', 'dashboards', 'dris.json');
const sampleFile = path.join(promDir, 'testdata', 'sample-metrics.prom');
const checkMetrics = path.join(promDir, 'check-metrics.sh');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

async function alertRules(): Promise<Rule[]> {
  const doc = (await readYaml(alertsFile)) as { groups: { name: string; rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

void t.test('promtool check rules and promtool test rules pass; a wrong expectation fails', async (t) => {
  const { promtool } = deployTools();
  const check = await run(promtool, ['check', 'rules', alertsFile]);
  t.equal(check.code, 0, check.stdout + check.stderr);
  const rules = await alertRules();
  t.match(check.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));

  const tests = await run(promtool, ['test', 'rules', path.join(promDir, 'alerts.test.yaml')]);
  t.equal(tests.code, 0, tests.stdout + tests.stderr);

  // The unit tests compare labels and annotations exactly: a changed expectation must fail them.
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-alerts-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await copyFile(alertsFile, path.join(dir, 'alerts.yaml'));
  const altered = (await readFile(path.join(promDir, 'alerts.test.yaml'), 'utf8')).replace('"2 dris batches are Failed"', '"3 dris batches are Failed"');
  await writeFile(path.join(dir, 'alerts.test.yaml'), altered);
  t.equal((await run(promtool, ['test', 'rules', path.join(dir, 'alerts.test.yaml')])).code, 1);
});

void t.test('the alerts the issue names exist, use catalogue metrics only, and link a runbook section', async (t) => {
  const rules = await alertRules();
  const names = rules.map((r) => r.alert);
  for (const required of [
    'DrisAnchoringStalled',
    'DrisQueueLagGrowing',
    'DrisBatchesFailed',
    'DrisLeaderFlapping',
    'DrisQueueBudgetNearlyFull',
    'DrisQueueBudgetExceeded',
    'DrisDiskNearlyFull',
    'DrisProcessDown',
    'DrisHttpErrors',
  ]) {
    t.ok(names.includes(required), required);
  }
  t.equal(new Set(names).size, names.length, 'alert names are unique');
  const anchors = markdownAnchors(path.join(repoRoot, 'docs', 'operations.md'));
  for (const r of rules) {
    t.match(r.labels?.['severity'], /^(critical|warning|info)$/, `${r.alert} severity`);
    t.type(r.annotations?.['summary'], 'string', `${r.alert} summary`);
    const link = /^docs\/operations\.md#([a-z0-9-]+)$/.exec(r.annotations?.['runbook_url'] ?? '');
    t.ok(link !== null && anchors.has(link[1] as string), `${r.alert} runbook ${r.annotations?.['runbook_url']} is a section of docs/operations.md`);
    for (const s of seriesIn(r.expr)) {
      t.ok(catalogueMetricOf(s) !== undefined || OTHER_SERIES.has(s), `${r.alert}: ${s} is in the metrics catalogue`);
    }
    for (const m of r.expr.matchAll(/\b(dris_[a-z0-9_]+)\{([^}]*)\}/g)) {
      const metric = catalogueMetricOf(m[1] as string);
      for (const l of (m[2] as string).matchAll(/([a-z_]+)\s*(?:=|!=|=~|!~)/g)) {
        const label = l[1] as string;
        t.ok(label === 'job' || label === 'instance' || label === 'le' || METRICS_CATALOGUE[metric ?? '']?.labels.includes(label), `${r.alert}: ${m[1]} has the label ${label}`);
      }
    }
  }
});

interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string }[];
}

void t.test('the Grafana dashboard shows every catalogue metric with queries promtool parses', async (t) => {
  const dash = JSON.parse(await readFile(dashboardFile, 'utf8')) as {
    uid: string;
    panels: Panel[];
    templating: { list: { name: string; type: string; current: { value: string } }[] };
  };
  t.equal(dash.uid, 'dris-overview');
  const exprs = dash.panels.flatMap((p) => (p.targets ?? []).map((x) => ({ panel: p.title, expr: x.expr })));
  t.ok(exprs.length > 0, 'panels have queries');
  const used = new Set(exprs.flatMap((e) => seriesIn(e.expr)).map((s) => catalogueMetricOf(s) ?? s));
  for (const metric of Object.keys(METRICS_CATALOGUE)) t.ok(used.has(metric), `a panel shows ${metric}`);
  for (const s of used) t.ok(METRICS_CATALOGUE[s] !== undefined || OTHER_SERIES.has(s), `${s} is a known series`);

  // The datasource variable defaults to the uid deploy/compose provisions.
  const dsVar = dash.templating.list.find((v) => v.type === 'datasource');
  const provisioned = (await readYaml(path.join(deployDir, 'compose', 'grafana', 'provisioning', 'datasources', 'prometheus.yaml'))) as {
    datasources: { uid: string; type: string }[];
  };
  t.equal(dsVar?.current.value, provisioned.datasources[0]?.uid);
  for (const p of dash.panels.filter((x) => x.type !== 'row')) t.equal(p.datasource?.uid, `\${${dsVar?.name}}`, `${p.title} uses the variable`);

  // Each query as a recording rule: promtool parses every expression (Grafana's range variables
  // replaced by durations).
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-dashboard-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const rules = exprs.map((e, i) => `      - record: dashboard:query_${i}\n        expr: ${JSON.stringify(e.expr.replaceAll('$__rate_interval', '1m'))}\n`).join('');
  await writeFile(path.join(dir, 'dashboard-queries.yaml'), `groups:\n  - name: dashboard\n    rules:\n${rules}`);
  const check = await run(deployTools().promtool, ['check', 'rules', path.join(dir, 'dashboard-queries.yaml')]);
  t.equal(check.code, 0, check.stdout + check.stderr);
  t.match(check.stdout, new RegExp(`SUCCESS: ${exprs.length} rules found`));
});

void t.test("the compose Prometheus configuration passes promtool check config, with the rules where it mounts them", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-prometheus-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await copyFile(path.join(deployDir, 'compose', 'prometheus', 'prometheus.yml'), path.join(dir, 'prometheus.yml'));
  await mkdir(path.join(dir, 'rules'));
  await copyFile(alertsFile, path.join(dir, 'rules', 'dris-alerts.yaml'));
  const r = await run(deployTools().promtool, ['check', 'config', path.join(dir, 'prometheus.yml')]);
  t.equal(r.code, 0, r.stdout + r.stderr);
  t.match(r.stdout, /SUCCESS: \d+ rules found/, 'the rule file was found and checked');
  const cfg = (await readYaml(path.join(dir, 'prometheus.yml'))) as { scrape_configs: { job_name: string; dns_sd_configs?: { names: string[]; port: number }[] }[] };
  for (const role of ['api', 'indexer', 'anchorer']) {
    const job = cfg.scrape_configs.find((j) => j.job_name === `dris-${role}`);
    t.same(job?.dns_sd_configs?.[0], { names: [role], type: 'A', port: 9464, refresh_interval: '15s' }, `every ${role} process's ops port`);
  }
});

void t.test('the sample exposition carries every catalogue metric with its type and labels only', async (t) => {
  const text = await readFile(sampleFile, 'utf8');
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]));
  for (const [name, spec] of Object.entries(METRICS_CATALOGUE)) {
    t.equal(types.get(name), spec.type, `${name} is a ${spec.type}`);
  }
  for (const m of text.matchAll(/^(dris_[a-z0-9_]+)(?:\{([^}]*)\})? /gm)) {
    const metric = catalogueMetricOf(m[1] as string);
    const labels = [...(m[2] ?? '').matchAll(/([a-z_]+)="/g)].map((l) => l[1] as string).filter((l) => l !== 'le');
    t.ok(metric !== undefined && labels.every((l) => METRICS_CATALOGUE[metric]?.labels.includes(l)), `${m[0].trim()}: catalogue labels only`);
  }
});

/** A loopback endpoint serving `body` as Prometheus text on every path. */
async function exposition(body: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/plain; version=0.0.4; charset=utf-8');
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

void t.test('check-metrics.sh: promtool check metrics on files and URLs; bad or foreign expositions fail', async (t) => {
  const env = { PROMTOOL: deployTools().promtool };
  const file = await run('bash', [checkMetrics, sampleFile], { env });
  t.equal(file.code, 0, file.stdout + file.stderr);
  t.equal(file.stdout.trim(), `ok ${sampleFile}`);

  const sample = await readFile(sampleFile, 'utf8');
  const good = await exposition(sample);
  t.teardown(good.close);
  const badLint = await exposition('# HELP dris_build_info x\n# TYPE dris_build_info gauge\ndris_build_info{version="1"} 1\n# HELP dris_things x\n# TYPE dris_things counter\ndris_things 1\n');
  t.teardown(badLint.close);
  const foreign = await exposition('# HELP other_total x\n# TYPE other_total counter\nother_total 1\n');
  t.teardown(foreign.close);

  const urls = await run('bash', [checkMetrics, good.url, good.url], { env });
  t.equal(urls.code, 0, urls.stdout + urls.stderr);
  t.equal(urls.stdout.trim().split('\n').length, 2, 'one line per target');

  const mixed = await run('bash', [checkMetrics, good.url, badLint.url, foreign.url, 'http://127.0.0.1:1/metrics'], { env });
  t.equal(mixed.code, 1);
  const lines = mixed.stdout.split('\n').filter((l) => /^(ok|FAIL) /.test(l));
  t.same(
    lines.map((l) => l.split(' ')[0]),
    ['ok', 'FAIL', 'FAIL', 'FAIL'],
    'a counter without _total, no dris_build_info, nothing listening',
  );

  const stdin = await run('bash', [checkMetrics, '-'], { env, input: sample });
  t.equal(stdin.code, 0, stdin.stdout);
});

import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './service.js';

/**
 * The tools of the deployment checks (test/integration/deploy-*.test.ts): helm, promtool,
 * hadolint, dris-deploy-check (deploy/checks) and systemd-analyze, ensured by scripts/tools.sh
 * (built or fetched once per machine into ~/.cache/dris-tools; the test command ensures them before
 * the suites run, so here they are only looked up), and a bounded way to run them.
 */

export const deployDir = path.join(repoRoot, 'deploy');

export interface DeployTools {
  readonly helm: string;
  readonly promtool: string;
  readonly hadolint: string;
  readonly deployCheck: string;
  readonly systemdAnalyze: string;
}

const TOOL_NAMES = ['helm', 'promtool', 'hadolint', 'deploy-check', 'systemd-analyze'] as const;

let tools: DeployTools | undefined;

/** Paths of the tools; a tool missing from the cache is built here (minutes, once per machine). */
export function deployTools(): DeployTools {
  if (tools !== undefined) return tools;
  const out = execFileSync('bash', [path.join(repoRoot, 'scripts', 'tools.sh'), ...TOOL_NAMES], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 30 * 60_000,
  });
  const paths = out.trim().split('\n');
  if (paths.length !== TOOL_NAMES.length) throw new Error(`scripts/tools.sh printed ${paths.length} paths for ${TOOL_NAMES.length} tools`);
  const [helm, promtool, hadolint, deployCheck, systemdAnalyze] = paths as [string, string, string, string, string];
  tools = { helm, promtool, hadolint, deployCheck, systemdAnalyze };
  return tools;
}

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly input?: string;
  readonly timeoutMs?: number;
}

/** Runs a command to its end (or its deadline, then killed: code -1) and never rejects. */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      [...args],
      {
        cwd: opts.cwd ?? repoRoot,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp', ...(opts.env ?? {}) },
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** A YAML file as data, through dris-deploy-check (no YAML parser among the project's dependencies). */
export async function readYaml(file: string): Promise<unknown> {
  const r = await run(deployTools().deployCheck, ['yaml2json', file]);
  if (r.code !== 0) throw new Error(`yaml2json ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout) as unknown;
}

export type MetricType = 'counter' | 'gauge' | 'histogram';

/**
 * The metrics catalogue every dris process serves on its ops port (CLUSTER point 4): names, types
 * and the only labels each carries. The alert rules, the dashboard and the sample exposition are
 * checked against it.
 */
export const METRICS_CATALOGUE: Readonly<Record<string, { readonly type: MetricType; readonly labels: readonly string[] }>> = {
  dris_build_info: { type: 'gauge', labels: ['version', 'roles', 'hash_backend'] },
  dris_http_requests_total: { type: 'counter', labels: ['route', 'method', 'status'] },
  dris_http_request_duration_seconds: { type: 'histogram', labels: ['route', 'method'] },
  dris_http_rejected_total: { type: 'counter', labels: ['status', 'reason'] },
  dris_records_accepted_total: { type: 'counter', labels: ['kind'] },
  dris_records_indexed_total: { type: 'counter', labels: [] },
  dris_records_dead_lettered_total: { type: 'counter', labels: ['consumer'] },
  dris_queue_lag_messages: { type: 'gauge', labels: ['consumer'] },
  dris_queue_bytes: { type: 'gauge', labels: [] },
  dris_queue_max_bytes: { type: 'gauge', labels: [] },
  dris_storage_free_bytes: { type: 'gauge', labels: [] },
  dris_batch_open_records: { type: 'gauge', labels: [] },
  dris_batch_open_age_seconds: { type: 'gauge', labels: [] },
  dris_batches: { type: 'gauge', labels: ['state'] },
  dris_batches_formed_total: { type: 'counter', labels: [] },
  dris_batches_anchored_total: { type: 'counter', labels: [] },
  dris_batches_failed_total: { type: 'counter', labels: [] },
  dris_ingest_to_anchored_seconds: { type: 'histogram', labels: [] },
  dris_anchor_gas_used: { type: 'histogram', labels: [] },
  dris_anchor_fee_wei_total: { type: 'counter', labels: [] },
  dris_leader: { type: 'gauge', labels: [] },
  dris_leader_epoch: { type: 'gauge', labels: [] },
  dris_leadership_changes_total: { type: 'counter', labels: [] },
  dris_chain_head_lag_seconds: { type: 'gauge', labels: [] },
  dris_index_query_duration_seconds: { type: 'histogram', labels: ['query'] },
  dris_events_dropped_total: { type: 'counter', labels: ['subscriber'] },
  dris_verifications_total: { type: 'counter', labels: ['status'] },
};

/** Series other than dris_* that rules and panels may use: Prometheus's own and prom-client's defaults. */
export const OTHER_SERIES = new Set(['up', 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_eventloop_lag_p99_seconds']);

/** The catalogue metric a series name belongs to (a histogram's _bucket/_sum/_count included). */
export function catalogueMetricOf(series: string): string | undefined {
  if (METRICS_CATALOGUE[series] !== undefined) return series;
  const m = /^(.*)_(bucket|sum|count)$/.exec(series);
  if (m !== null && METRICS_CATALOGUE[m[1] as string]?.type === 'histogram') return m[1];
  return undefined;
}

/** Metric names a PromQL expression selects (identifiers followed by `{`, `[` or standing alone). */
export function seriesIn(expr: string): string[] {
  const names = new Set<string>();
  // Strings (label values, templates) and label matchers hold no metric names.
  const bare = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""').replace(/\{[^}]*\}/g, '{}');
  for (const m of bare.matchAll(/\b((?:dris|process|nodejs)_[a-z0-9_]+|up)\b/g)) names.add(m[1] as string);
  return [...names];
}

/** GitHub's anchors of the Markdown headings of a file (lower case, punctuation dropped, spaces to dashes). */
export function markdownAnchors(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    // A `#` line inside a fenced code block is a shell comment, not a heading.
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const m = /^#{1,6}\s+(.*)$/.exec(line);
    if (m === null) continue;
    const slug = (m[1] as string)
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    anchors.add(slug);
  }
  return anchors;
}

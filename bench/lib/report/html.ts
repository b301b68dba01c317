import { describeKnee } from '../sweep.js';
import { fmtNum, fmtRatio } from '../table.js';
import type { BenchResult } from '../results.js';
import { distribution, latencyOverTime, phaseLatencies, sweepDistribution, sweepLatency, sweepThroughput, throughputOverTime } from './charts.js';
import { escapeXml } from './svg.js';

/**
 * The --html report: one self-contained file (inline style, inline SVG, no script, nothing fetched)
 * with the environment, the headline figures beside their floors, every sweep, and per phase its
 * latency over time, its throughput over time and its latency distribution.
 */

const CSS = `body{font:14px/1.45 sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.charts{display:flex;flex-wrap:wrap;gap:12px}
.note{color:#555}code{background:#f4f4f4;padding:1px 4px}`;

const e = escapeXml;

function row(cells: readonly string[], header = false): string {
  const tag = header ? 'th' : 'td';
  return `<tr>${cells.map((c) => `<${tag}${!header && /^[-+]?[0-9][0-9,.]*$/.test(c) ? ' class="n"' : ''}>${e(c)}</${tag}>`).join('')}</tr>`;
}

function tableHtml(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return `<table>${row(header, true)}${rows.map((r) => row(r)).join('')}</table>`;
}

function environment(r: BenchResult): string {
  const env = r.environment;
  const rows: [string, string][] = [
    ['CPU', `${env.cpuModel} (${env.cores} cores, ${env.memoryGiB} GiB)`],
    ['kernel / Node', `${env.os} ${env.kernel} / ${env.node}`],
    ['commit', `${env.commit ?? 'none'}${env.commitDirty === true ? ' (with uncommitted changes)' : ''}`],
    ['hash backend', `service ${env.hashBackend.service ?? 'n/a'}, bench ${env.hashBackend.bench}`],
    ['pinning', env.pinning === null ? 'none' : `server CPU ${env.pinning.server}, generator CPU ${env.pinning.generator}`],
    ['machine before the run', `${env.cpuBusyBeforePercent ?? 'n/a'} % busy, load average ${env.loadAvg1mBefore}`],
    ['started / wall time', `${r.startedAt} / ${Math.round(r.wallSeconds)} s`],
    ['warm-up', `${r.warmupSeconds} s per load phase, excluded from every figure`],
    ['command', `npm run bench -- ${r.argv.join(' ')}`],
  ];
  return `<table>${rows.map((r) => row(r)).join('')}</table>`;
}

function headline(r: BenchResult): string {
  const floors = new Map(r.floors.map((f) => [f.key, f]));
  const rows = r.headline.map((f) => {
    const against = (f.floors ?? []).map((x) => {
      const fl = floors.get(x.key);
      return fl === undefined ? '' : `${fmtRatio(x.ratio)} of ${fl.label} (${fmtNum(fl.value)} ${fl.unit})`;
    });
    return [f.label, fmtNum(f.value), f.unit, against.join('; ')];
  });
  const floorRows = r.floors.map((f) => [f.label, fmtNum(f.value), f.unit, f.source]);
  return `${tableHtml(['figure', 'value', 'unit', 'against its floor (same run)'], rows)}<h3>Floors measured in this run</h3>${tableHtml(['floor', 'value', 'unit', 'how'], floorRows)}`;
}

export function renderHtml(r: BenchResult): string {
  const parts: string[] = [];
  parts.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>dris bench: ${e(r.scenario)} ${e(r.startedAt)}</title><style>${CSS}</style></head><body>`);
  parts.push(`<h1>dris bench: ${e(r.scenario)}</h1>`);
  parts.push(`<h2>Environment</h2>${environment(r)}`);
  parts.push(`<h2>Headline</h2>${headline(r)}`);
  for (const n of r.notes) parts.push(`<p class="note">${e(n)}</p>`);
  for (const s of r.sweeps) {
    parts.push(`<h2>Sweep: ${e(s.title)}</h2>`);
    parts.push(`<p>knee: <b>${e(describeKnee(s, s.unit))}</b>; bound: ${e(s.latencyLabel)} &lt;= ${s.boundMs} ms, achieved &gt;= 95 % of offered, &lt;= 0.1 % failed.</p>`);
    parts.push(`<div class="charts">${sweepThroughput(s)}${sweepLatency(s)}${sweepDistribution(s, r.phases) ?? ''}</div>`);
    parts.push(tableHtml(['offered', 'achieved', 'p50 ms', 'p99 ms', 'failed', 'verdict'], s.points.map((p) => [fmtNum(p.offered), fmtNum(p.achieved), String(p.p50), String(p.p99), String(p.failed), p.pass ? 'pass' : (p.reason ?? 'fail')])));
  }
  for (const p of r.phases) {
    const sets = phaseLatencies(p);
    if (sets.length === 0 && p.data === undefined) continue;
    parts.push(`<h2>${e(p.title)}</h2>`);
    if (p.load !== undefined) {
      const l = p.load;
      const mode = l.mode === 'open' ? `open loop at ${fmtNum(l.offeredPerSec)} req/s` : `closed loop, ${l.connections} connections`;
      parts.push(
        `<p>${e(mode)}; ${fmtNum(l.okPerSec)} ok/s over ${l.durationSec} s after ${l.warmupSec} s warm-up; statuses ${e(JSON.stringify(l.statuses))}; errors ${e(JSON.stringify(l.errors))}; generator ${l.generator.workers} thread(s), ${l.generator.cpuUsPerRequest} µs CPU/request.</p>`,
      );
    }
    if (sets.length > 0) {
      parts.push(tableHtml(['latency', 'count', 'p50', 'p90', 'p99', 'p99.9', 'max', 'mean (ms)'], sets.map((s) => [s.label, String(s.summary.count), ...[s.summary.p50, s.summary.p90, s.summary.p99, s.summary.p999, s.summary.max, s.summary.mean].map(String)])));
      const charts: string[] = [];
      for (const s of sets) if (s.series.length > 0) charts.push(latencyOverTime(`${p.title}: ${s.label} over time`, s.series));
      if (p.load !== undefined && p.load.series.length > 0) charts.push(throughputOverTime(`${p.title}: answers per second`, p.load.series, 1));
      charts.push(distribution(`${p.title}: latency distribution`, sets.map((s) => ({ name: s.label, histogram: s.histogram }))));
      parts.push(`<div class="charts">${charts.join('')}</div>`);
    }
    if (p.data !== undefined) parts.push(tableHtml(['figure', 'value'], Object.entries(p.data).map(([k, v]) => [k, typeof v === 'object' ? JSON.stringify(v) : String(v)])));
  }
  parts.push(`<p class="note">Written by <code>npm run bench</code>; results schema ${e(r.schema)}.</p></body></html>`);
  return parts.join('\n');
}

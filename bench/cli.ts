import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { compareResults, formatComparison } from './lib/compare.js';
import { captureEnvironment, checkHashBackend, describeEnvironment } from './lib/environment.js';
import { bool, formatOptions, num, parseOptions, str, type OptionSpec } from './lib/options.js';
import { Progress } from './lib/progress.js';
import { EXIT_REFUSED, EXIT_REGRESSION, isBenchRefusal, BenchRefusal } from './lib/refusal.js';
import { loadScenarios } from './lib/registry.js';
import { renderHtml } from './lib/report/html.js';
import { writeSvgs } from './lib/report/svg-files.js';
import { compactLine, readResult, RESULT_SCHEMA, writeResult, type BenchResult } from './lib/results.js';
import type { Scenario } from './lib/scenario.js';
import { setLogLevel } from '../src/util/logger.js';
import { fmtNum, fmtRatio, table } from './lib/table.js';
import { useNativeAddon } from '../src/adapters/hashing/native-backend.js';
import { loadToolConfig } from '../src/config/cli-config.js';

/**
 * `npm run bench -- <scenario> [options]` and `dris bench ...`: one entry point for every
 * scenario, plus `compare` and `report` on results already written. Exit status: 0 done,
 * 1 failed, 2 refused (bad option, missing tool, fallback backend), 3 regression past the
 * --compare threshold.
 */

const out = (s: string): void => {
  process.stdout.write(`${s}\n`);
};
const err = (s: string): void => {
  process.stderr.write(`${s}\n`);
};

function commonOptions(s: Scenario): OptionSpec[] {
  return [
    { name: 'duration', kind: 'number', default: s.defaults.duration, unit: 's', help: 'measured seconds of each load phase' },
    { name: 'warmup', kind: 'number', default: s.defaults.warmup, min: 0, unit: 's', help: 'seconds of each load phase run before measuring, excluded from every figure' },
    { name: 'p99-bound', kind: 'number', default: s.defaults.p99BoundMs, unit: 'ms', help: 'a sweep rate passes while its p99 stays under this' },
    { name: 'floor-seconds', kind: 'number', default: 3, unit: 's', help: 'seconds of each floor measurement' },
    { name: 'out', kind: 'string', value: 'FILE', help: 'results file (default .bench/results/<scenario>-<time>-<commit>.json)' },
    { name: 'compare', kind: 'string', value: 'OLD.json', help: 'an earlier results file: print the changes, exit 3 past --threshold' },
    { name: 'threshold', kind: 'number', default: 10, unit: '%', help: 'regression threshold of --compare' },
    { name: 'html', kind: 'flag-or-string', help: 'also write a self-contained HTML report with SVG plots (default: beside the results file)' },
    { name: 'allow-fallback', kind: 'boolean', help: 'run even where the hashing backend is the wasm or js fallback' },
    { name: 'help', kind: 'boolean', help: 'this help' },
  ];
}

function usage(scenarios: readonly Scenario[]): string {
  const w = Math.max(...scenarios.map((s) => s.name.length), 7) + 2;
  return [
    'usage: npm run bench -- <scenario> [options]        (or: dris bench <scenario> [options])',
    '       npm run bench -- compare OLD.json NEW.json [--threshold 10]',
    '       npm run bench -- report RESULT.json [--html FILE] [--svg-dir DIR]',
    '',
    'scenarios:',
    ...scenarios.flatMap((s) => [`  ${s.name.padEnd(w)}${s.summary}`, ...wrapOptions(s.options.map((o) => `--${o.name}`), ' '.repeat(w + 2))]),
    '',
    `common options: ${scenarios[0] === undefined ? '' : commonOptions(scenarios[0]).map((o) => `--${o.name}`).join(' ')}`,
    '',
    'npm run bench -- <scenario> --help explains its options. Every run prints its table, the path of',
    'its results file (JSON: environment, options, every figure) and, last, one JSON line.',
  ].join('\n');
}

/** Option names in lines of at most 100 characters, under a scenario's summary. */
function wrapOptions(names: readonly string[], indent: string): string[] {
  const lines: string[] = [];
  let line = `${indent}options:`;
  for (const n of names) {
    if (line.length + n.length + 1 > 100) {
      lines.push(line);
      line = `${indent}        `;
    }
    line += ` ${n}`;
  }
  if (names.length > 0) lines.push(line);
  return lines;
}

function scenarioHelp(s: Scenario): string {
  return [`usage: npm run bench -- ${s.name} [options]`, '', s.description, '', 'options:', formatOptions(s.options), '', 'common options:', formatOptions(commonOptions(s))].join('\n');
}

export function headlineTable(r: BenchResult): string {
  const floors = new Map(r.floors.map((f) => [f.key, f]));
  const rows: string[][] = [];
  for (const f of r.headline) {
    const against = f.floors ?? [];
    if (against.length === 0) rows.push([f.label, fmtNum(f.value), f.unit, '', '', '']);
    against.forEach((x, i) => {
      const fl = floors.get(x.key);
      rows.push(i === 0 ? [f.label, fmtNum(f.value), f.unit, fl?.label ?? x.key, fl === undefined ? '' : `${fmtNum(fl.value)} ${fl.unit}`, fmtRatio(x.ratio)] : ['', '', '', fl?.label ?? x.key, fl === undefined ? '' : `${fmtNum(fl.value)} ${fl.unit}`, fmtRatio(x.ratio)]);
    });
  }
  return table(['figure', 'value', 'unit', 'floor (same run)', 'floor value', 'of floor'], rows);
}

async function runScenario(s: Scenario, argv: readonly string[]): Promise<number> {
  const specs = [...s.options, ...commonOptions(s)];
  const { values, positionals } = parseOptions(argv, specs);
  if (bool(values, 'help')) {
    out(scenarioHelp(s));
    return 0;
  }
  if (positionals.length > 0) throw new BenchRefusal(`unexpected argument "${positionals[0]}"; options start with --`);
  const compareWith = str(values, 'compare');
  const previous = compareWith === undefined ? null : readResult(compareWith);
  const { checkTools } = await import('./lib/tools.js');
  checkTools(s.requirements?.(values) ?? []);
  const allowFallback = bool(values, 'allow-fallback');
  const backend = s.ownBackendCheck === true ? 'see results' : await checkHashBackend(allowFallback);
  // dris components running inside this process (floors, the verify loader) log warnings only.
  setLogLevel('warn');
  const progress = new Progress();
  progress.line(`bench ${s.name}: reading the machine (2 s)`);
  const environment = await captureEnvironment(backend);
  if (environment.cpuBusyBeforePercent !== null && environment.cpuBusyBeforePercent > 30) {
    progress.line(`warning: the machine was ${environment.cpuBusyBeforePercent} % busy before the run; figures will be lower and noisier than on a quiet machine`);
  }
  progress.plan(s.plan(values));
  const startedAt = new Date();
  const o = await s.run({ values, progress, environment, allowFallback });
  const finishedAt = new Date();
  const result: BenchResult = {
    schema: RESULT_SCHEMA,
    scenario: s.name,
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    wallSeconds: Math.round((finishedAt.getTime() - startedAt.getTime()) / 100) / 10,
    argv: [s.name, ...argv],
    options: Object.fromEntries(Object.entries(values).filter(([k]) => k !== 'help')),
    config: o.config,
    environment,
    warmupSeconds: o.warmupSeconds,
    headline: o.headline,
    floors: o.floors,
    phases: o.phases,
    sweeps: o.sweeps,
    notes: o.notes,
  };
  const file = writeResult(result, str(values, 'out'));
  out('');
  for (const t of o.tables) out(`${t}\n`);
  out(headlineTable(result));
  out('');
  out(describeEnvironment(environment));
  if (o.warmupSeconds > 0) out(`warm-up: the first ${o.warmupSeconds} s of each load phase, excluded from every figure`);
  for (const n of o.notes) out(`note: ${n}`);
  out(`results: ${file}`);
  const html = values['html'];
  if (html !== undefined && html !== false) {
    const target = typeof html === 'string' ? html : file.replace(/\.json$/, '.html');
    writeFileSync(target, renderHtml(result));
    out(`report: ${target}`);
  }
  let status = 0;
  if (previous !== null && compareWith !== undefined) {
    const c = compareResults(previous, result, num(values, 'threshold'));
    out(formatComparison(c, compareWith, file));
    if (c.regressions > 0) status = EXIT_REGRESSION;
  }
  out(compactLine(result, file));
  return status;
}

function compareCommand(argv: readonly string[]): number {
  const { values, positionals } = parseOptions(argv, [{ name: 'threshold', kind: 'number', default: 10, unit: '%', help: '' }]);
  if (positionals.length !== 2) throw new BenchRefusal('compare needs two results files: OLD.json NEW.json');
  const [a, b] = positionals as [string, string];
  const c = compareResults(readResult(a), readResult(b), num(values, 'threshold'));
  out(formatComparison(c, a, b));
  return c.regressions > 0 ? EXIT_REGRESSION : 0;
}

function reportCommand(argv: readonly string[]): number {
  const { values, positionals } = parseOptions(argv, [
    { name: 'html', kind: 'string', help: '' },
    { name: 'svg-dir', kind: 'string', help: '' },
  ]);
  if (positionals.length !== 1) throw new BenchRefusal('report needs one results file');
  const file = positionals[0] as string;
  const r = readResult(file);
  const html = str(values, 'html') ?? (str(values, 'svg-dir') === undefined ? file.replace(/\.json$/, '.html') : undefined);
  if (html !== undefined) {
    writeFileSync(html, renderHtml(r));
    out(`report: ${html}`);
  }
  const dir = str(values, 'svg-dir');
  if (dir !== undefined) for (const f of writeSvgs(r, dir)) out(`svg: ${f}`);
  return 0;
}

/** Runs the bench command line; returns the exit status. */
export async function benchMain(argv: readonly string[]): Promise<number> {
  // The backend the bench measures in-process is the one the service would load (DRIS_NATIVE_ADDON).
  useNativeAddon(loadToolConfig().nativeAddon);
  try {
    const scenarios = await loadScenarios();
    const [first, ...rest] = argv;
    if (first === undefined || first === 'help' || first === '--help' || first === '-h') {
      out(usage(scenarios));
      return first === undefined ? EXIT_REFUSED : 0;
    }
    if (first === 'compare') return compareCommand(rest);
    if (first === 'report') return reportCommand(rest);
    const s = scenarios.find((x) => x.name === first);
    if (s === undefined) throw new BenchRefusal(`unknown scenario "${first}"; scenarios: ${scenarios.map((x) => x.name).join(', ')}`);
    return await runScenario(s, rest);
  } catch (e) {
    if (isBenchRefusal(e)) {
      err(`bench: refused: ${e.message}`);
      for (const r of e.remedy) err(`  ${r}`);
      return EXIT_REFUSED;
    }
    err(`bench: failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    err(`(scratch directories are under ${tmpdir()})`);
    return 1;
  }
}

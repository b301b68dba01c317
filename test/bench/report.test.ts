import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import t from 'tap';
import { renderHtml } from '../../bench/lib/report/html.js';
import { benchMainJs, syntheticResult, writeResultFile } from './fixtures.js';

/**
 * The --html report opened offline in headless Chromium (Debian's chromium, driven by
 * playwright-core; never a downloaded browser): every plot is drawn, and nothing is fetched
 * from anywhere but the file itself.
 */

const CHROMIUM = process.env['DRIS_CHROMIUM'] ?? '/usr/bin/chromium';
const dir = mkdtempSync(path.join(tmpdir(), 'dris-bench-report-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('the report renders in headless Chromium with every plot drawn', async (t) => {
  t.ok(existsSync(CHROMIUM), `${CHROMIUM} present (apt-get install -y chromium; scripts/test.sh installs it)`);
  const file = path.join(dir, 'report.html');
  writeFileSync(file, renderHtml(syntheticResult(1)));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-gpu', '--no-first-run'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requested: string[] = [];
  page.on('request', (r) => requested.push(r.url()));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load', timeout: 60_000 });
  t.same(requested, [pathToFileURL(file).href], 'only the file itself is loaded (self-contained, opens offline)');
  // Runs in the page (as text: this project compiles without the DOM's types).
  const charts = (await page.evaluate(`[...document.querySelectorAll('svg.chart')].map((svg) => {
    const box = svg.getBoundingClientRect();
    const paths = [...svg.querySelectorAll('path.series')].map((p) => {
      const b = p.getBBox();
      return { length: p.getTotalLength(), w: b.width, h: b.height };
    });
    return { title: svg.getAttribute('aria-label') || '', width: box.width, height: box.height, paths, ticks: svg.querySelectorAll('text').length };
  })`)) as { title: string; width: number; height: number; paths: { length: number; w: number; h: number }[]; ticks: number }[];
  const kinds = { overTime: 0, distribution: 0, offered: 0 };
  for (const c of charts) {
    if (/over time/.test(c.title)) kinds.overTime++;
    if (/latency distribution/.test(c.title)) kinds.distribution++;
    if (/against offered rate/.test(c.title)) kinds.offered++;
    t.ok(c.width > 300 && c.height > 150, `${c.title}: laid out (${c.width}x${c.height})`);
    t.ok(c.paths.length > 0, `${c.title}: has series`);
    t.ok(c.ticks > 5, `${c.title}: has axis labels`);
    for (const p of c.paths) t.ok(p.length > 10 && (p.w > 1 || p.h > 1), `${c.title}: a series is drawn (length ${Math.round(p.length)})`);
  }
  t.ok(kinds.overTime >= 1, 'latency over time');
  t.ok(kinds.distribution >= 1, 'latency distribution');
  t.ok(kinds.offered >= 1, 'throughput against offered rate');
  const text = (await page.evaluate('document.body.innerText')) as string;
  t.match(text, /knee: 2,000 records\/s/);
  t.match(text, /5\.0 % of bare uWebSockets\.js single/);
  t.match(text, /Test CPU/);
  // A picture for whoever runs the test by hand.
  await page.screenshot({ path: path.join(dir, 'report.png'), fullPage: true });
});

t.test('report writes the HTML and the plots as SVG files from a results file', (t) => {
  const json = writeResultFile(dir, 'ingest.json', syntheticResult(1));
  const svgDir = path.join(dir, 'svg');
  const r = spawnSync(process.execPath, [benchMainJs, 'report', json, '--html', path.join(dir, 'out.html'), '--svg-dir', svgDir], { encoding: 'utf8', timeout: 60_000 });
  t.equal(r.status, 0, r.stderr);
  t.ok(readFileSync(path.join(dir, 'out.html'), 'utf8').startsWith('<!doctype html>'));
  const files = readdirSync(svgDir).sort();
  t.same(files, ['ingest-embedded.single-distribution.svg', 'ingest-embedded.single-latency-over-time.svg', 'ingest-embedded.single-latency.svg', 'ingest-embedded.single-throughput.svg']);
  for (const f of files) t.match(readFileSync(path.join(svgDir, f), 'utf8'), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^]*<path class="series"[^]*<\/svg>\n$/, f);
  t.end();
});

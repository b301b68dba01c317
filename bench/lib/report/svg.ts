/**
 * Line charts as self-contained SVG text (their style inside, no script, no font or file from
 * elsewhere), so a report opens offline and a chart can be saved on its own for the README.
 * x is linear or a percentile axis (log of 1/(1-p): 50 %, 90 %, 99 %, 99.9 % equally spaced);
 * y is linear or logarithmic.
 */

export interface ChartSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
  /** Draw a dot at each point (few points: sweeps). */
  readonly markers?: boolean;
}

export interface ChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly ChartSeries[];
  readonly xScale?: 'linear' | 'percentile';
  readonly yScale?: 'linear' | 'log';
  readonly width?: number;
  readonly height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#17becf', '#7f7f7f'];
const M = { left: 64, right: 16, top: 34, bottom: 46 };

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Percentile (0..100) to its axis position: log10(1 / (1 - p)), the 100 % point a step past the last. */
export function percentileX(p: number, maxX = 6): number {
  if (p >= 100) return maxX;
  return Math.min(maxX, Math.log10(1 / (1 - p / 100)));
}

function niceStep(range: number, target: number): number {
  const raw = range / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

function linearTicks(min: number, max: number, target = 5): number[] {
  if (max <= min) return [min];
  const step = niceStep(max - min, target);
  const out: number[] = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

export function formatTick(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(0)}k`;
  if (a >= 1000) return `${+(v / 1e3).toFixed(1)}k`;
  if (a >= 1 || a === 0) return `${+v.toFixed(1)}`;
  return `${+v.toPrecision(2)}`;
}

export function lineChart(spec: ChartSpec): string {
  const W = spec.width ?? 720;
  const H = spec.height ?? 300;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const pts = spec.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const logY = spec.yScale === 'log';
  const ys = pts.map(([, y]) => (logY ? Math.log10(Math.max(y, 1e-3)) : y));
  const xs = pts.map(([x]) => x);
  let [x0, x1] = xs.length === 0 ? [0, 1] : [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = ys.length === 0 ? [0, 1] : [Math.min(...ys), Math.max(...ys)];
  if (!logY) y0 = Math.min(0, y0);
  if (spec.xScale === 'percentile') x0 = 0;
  else if (x0 > 0 && x0 < (x1 - x0) * 0.5) x0 = 0;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + (logY ? 1 : Math.max(1, Math.abs(y0)));
  if (logY) {
    y0 = Math.floor(y0);
    y1 = Math.ceil(y1);
  } else y1 += (y1 - y0) * 0.05;
  const sx = (x: number): number => M.left + ((x - x0) / (x1 - x0)) * pw;
  const sy = (y: number): number => M.top + ph - (((logY ? Math.log10(Math.max(y, 1e-3)) : y) - y0) / (y1 - y0)) * ph;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${escapeXml(spec.title)}">`);
  out.push(
    '<style>.chart text{font:12px sans-serif;fill:#222}.chart .title{font-weight:bold;font-size:13px}.chart .grid{stroke:#e3e3e3}.chart .frame{fill:none;stroke:#888}.chart .series{fill:none;stroke-width:1.8}</style>',
  );
  out.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text class="title" x="${M.left}" y="20">${escapeXml(spec.title)}</text>`);
  // Grid and ticks.
  const yTicks = logY ? Array.from({ length: y1 - y0 + 1 }, (_, i) => 10 ** (y0 + i)) : linearTicks(y0, y1);
  for (const t of yTicks) {
    const y = sy(t);
    out.push(`<line class="grid" x1="${M.left}" x2="${M.left + pw}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}"/>`);
    out.push(`<text x="${M.left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${formatTick(t)}</text>`);
  }
  const xTicks: [number, string][] =
    spec.xScale === 'percentile'
      ? [0, 0.30103, 1, 2, 3, 4, 5]
          .filter((v) => v <= x1 + 1e-9)
          .map((v) => [v, v === 0 ? '0%' : v < 1 ? '50%' : `${(100 - 100 / 10 ** v).toFixed(Math.max(0, v - 2))}%`])
      : linearTicks(x0, x1).map((v) => [v, formatTick(v)]);
  for (const [v, label] of xTicks) {
    const x = sx(v);
    out.push(`<line class="grid" x1="${x.toFixed(1)}" x2="${x.toFixed(1)}" y1="${M.top}" y2="${M.top + ph}"/>`);
    out.push(`<text x="${x.toFixed(1)}" y="${M.top + ph + 16}" text-anchor="middle">${label}</text>`);
  }
  out.push(`<rect class="frame" x="${M.left}" y="${M.top}" width="${pw}" height="${ph}"/>`);
  out.push(`<text x="${M.left + pw / 2}" y="${H - 8}" text-anchor="middle">${escapeXml(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(14 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${escapeXml(spec.yLabel)}</text>`);
  // Series, then the legend on a white ground in the top right corner.
  const legendW = 38 + 8 * Math.max(0, ...spec.series.map((s) => s.name.length));
  const legendX = M.left + pw - legendW - 6;
  out.push(`<rect x="${legendX}" y="${M.top + 4}" width="${legendW}" height="${spec.series.length * 16 + 6}" fill="#fff" stroke="#ddd"/>`);
  spec.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] as string;
    const valid = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (valid.length === 0) return;
    const d = valid.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${sx(x).toFixed(1)} ${sy(y).toFixed(1)}`).join(' ');
    // A single point still gets a visible mark: a short horizontal stroke.
    const path = valid.length === 1 ? `${d} l0.01 0` : d;
    out.push(`<path class="series" data-series="${escapeXml(s.name)}" d="${path}" stroke="${color}"${s.dashed === true ? ' stroke-dasharray="5 4"' : ''}${valid.length === 1 ? ' stroke-linecap="round" stroke-width="6"' : ''}/>`);
    if (s.markers === true) for (const [x, y] of valid) out.push(`<circle class="point" cx="${sx(x).toFixed(1)}" cy="${sy(y).toFixed(1)}" r="3.5" fill="${color}"/>`);
    const ly = M.top + 18 + i * 16;
    out.push(`<line x1="${legendX + 6}" x2="${legendX + 26}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2"${s.dashed === true ? ' stroke-dasharray="5 4"' : ''}/>`);
    out.push(`<text x="${legendX + 30}" y="${ly}">${escapeXml(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}

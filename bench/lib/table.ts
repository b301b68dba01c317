/** Plain-text tables for the terminal: columns padded to their widest cell, numbers right-aligned. */

const numeric = /^[-+]?[0-9][0-9,]*(\.[0-9]+)?( ?(%|x|ms|s))?$/;

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => (numeric.test(c) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** A figure for a table: thousands separated from 100 up, three significant decimals below. */
export function fmtNum(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '-';
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (v === 0) return '0';
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(Math.abs(v) >= 1 ? 2 : 3);
}

/** value / floor as a percentage or a multiple, e.g. "2.4 %" or "3.1 x". */
export function fmtRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return '-';
  return ratio >= 1 ? `${ratio.toFixed(ratio >= 10 ? 0 : 1)} x` : `${(100 * ratio).toFixed(ratio >= 0.1 ? 0 : 1)} %`;
}

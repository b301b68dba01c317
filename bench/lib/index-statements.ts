/**
 * The hot index's time by statement, from the service's own metric
 * (`dris_index_query_duration_seconds`, one series per query or insert name): two readings
 * around a phase give each statement's count and the seconds spent waiting for it. These are wall
 * times seen by the caller: they include the statement's wait for the CPU and for the engine
 * (the embedded one runs queries with parameters one at a time), and statements overlap, so
 * their sum may pass the phase's length. They rank what keeps the engine busy; the CPU itself is
 * in the thread table.
 */

const METRIC = 'dris_index_query_duration_seconds';

export interface StatementTotal {
  readonly seconds: number;
  readonly count: number;
}

export type StatementReading = ReadonlyMap<string, StatementTotal>;

const SERIES = new RegExp(`^${METRIC}_(sum|count)\\{query="([^"]*)"\\}\\s+(\\S+)`);

/** The statement totals in a Prometheus text exposition. */
export function parseStatements(text: string): StatementReading {
  const out = new Map<string, { seconds: number; count: number }>();
  for (const line of text.split('\n')) {
    const m = SERIES.exec(line);
    if (m === null) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    const name = m[2] as string;
    const t = out.get(name) ?? { seconds: 0, count: 0 };
    if (m[1] === 'sum') t.seconds = value;
    else t.count = value;
    out.set(name, t);
  }
  return out;
}

/** The sum of a counter's series (every label set) in a Prometheus text exposition; 0 when absent. */
export function counterTotal(text: string, name: string): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(value)) total += value;
  }
  return total;
}

/** The service's metrics now, as text; empty when they cannot be read. */
export async function readMetricsText(opsUrl: string, timeoutMs = 5_000): Promise<string> {
  try {
    const res = await fetch(`${opsUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    return res.ok ? await res.text() : '';
  } catch {
    return '';
  }
}

export interface StatementCost {
  readonly statement: string;
  readonly count: number;
  readonly seconds: number;
  /** Mean wall time of one, milliseconds. */
  readonly meanMs: number;
  /** Share of all statements' wall time between the readings, percent. */
  readonly share: number;
}

/** Each statement's totals between two readings, most time first. */
export function statementCosts(before: StatementReading, after: StatementReading): StatementCost[] {
  const spent = [...after].map(([statement, a]) => {
    const b = before.get(statement);
    return { statement, seconds: Math.max(0, a.seconds - (b?.seconds ?? 0)), count: Math.max(0, a.count - (b?.count ?? 0)) };
  });
  const total = spent.reduce((s, x) => s + x.seconds, 0);
  return spent
    .filter((x) => x.count > 0)
    .sort((a, b) => b.seconds - a.seconds)
    .map(({ statement, seconds, count }) => ({
      statement,
      count,
      seconds: Math.round(seconds * 100) / 100,
      meanMs: Math.round((10 * 1000 * seconds) / count) / 10,
      share: total > 0 ? Math.round((1000 * seconds) / total) / 10 : 0,
    }));
}

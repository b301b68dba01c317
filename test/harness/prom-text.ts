/**
 * Reads Prometheus text exposition (what /metrics serves) into samples, for assertions on names,
 * types, labels and values. Only what prom-client writes: `# HELP`, `# TYPE`, and
 * `name{label="value",...} number` lines.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  /** Metric family name → type (counter, gauge, histogram, ...). */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
  /** Samples of `name` whose labels include `labels`. */
  find(name: string, labels?: Readonly<Record<string, string>>): Sample[];
  /** The one sample of `name` with `labels` (undefined when none). */
  value(name: string, labels?: Readonly<Record<string, string>>): number | undefined;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

function parseValue(raw: string): number {
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  return Number(raw);
}

export function parseExposition(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice('# TYPE '.length).split(' ');
      if (name !== undefined && type !== undefined) types.set(name, type);
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = LINE.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = (l[2] as string).replace(/\\"/g, '"').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
    samples.push({ name: m[1] as string, labels, value: parseValue(m[3] as string) });
  }
  const find = (name: string, labels: Readonly<Record<string, string>> = {}): Sample[] =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    types,
    samples,
    find,
    value(name, labels) {
      const found = find(name, labels);
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels ?? {})}`);
      return found[0]?.value;
    },
  };
}

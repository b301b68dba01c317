/** Command-line options of the benchmarks: `--name value`. */

export function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? def) : def;
}

/** A positive number option; anything else stops the bench before it starts. */
export function num(name: string, def: number): number {
  const v = Number(arg(name, String(def)));
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
}

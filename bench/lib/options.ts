import { BenchRefusal } from './refusal.js';

/**
 * Options of the bench command line: declared once per scenario (name, type, default, unit, help),
 * parsed strictly (an unknown option, a missing value or a value of the wrong kind is refused
 * before anything starts) and printed by --help from the same declarations.
 */

export type OptionKind =
  /** A finite number > 0 (or >= 0 with min: 0). */
  | 'number'
  /** A whole number. */
  | 'integer'
  | 'string'
  /** Present or not; `--no-NAME` sets it false. */
  | 'boolean'
  /** Comma-separated words, each from `choices` when given. */
  | 'list'
  /** Present alone (true) or followed by comma-separated positive numbers. */
  | 'flag-or-numbers'
  /** Present alone (true) or followed by a value (a file name). */
  | 'flag-or-string';

export type OptionValue = number | string | boolean | readonly string[] | readonly number[] | undefined;

export interface OptionSpec {
  readonly name: string;
  readonly kind: OptionKind;
  readonly help: string;
  readonly default?: OptionValue;
  readonly unit?: string;
  readonly min?: number;
  readonly max?: number;
  readonly choices?: readonly string[];
  /** What --help shows for the value (FILE, DIR); N for numbers, VALUE otherwise. */
  readonly value?: string;
}

export type OptionValues = Readonly<Record<string, OptionValue>>;

function positiveNumber(spec: OptionSpec, raw: string): number {
  const v = Number(raw);
  const min = spec.min ?? Number.MIN_VALUE;
  if (raw.trim() === '' || !Number.isFinite(v) || v < min || (spec.max !== undefined && v > spec.max)) {
    const range = spec.max === undefined ? `>= ${spec.min ?? '> 0'}` : `${spec.min ?? 0}..${spec.max}`;
    throw new BenchRefusal(`--${spec.name} must be a number ${range}${spec.unit === undefined ? '' : ` (${spec.unit})`}, not "${raw}"`);
  }
  if (spec.kind === 'integer' && !Number.isInteger(v)) throw new BenchRefusal(`--${spec.name} must be a whole number, not "${raw}"`);
  return v;
}

function convert(spec: OptionSpec, raw: string): OptionValue {
  switch (spec.kind) {
    case 'number':
    case 'integer':
      return positiveNumber(spec, raw);
    case 'string':
      if (raw === '') throw new BenchRefusal(`--${spec.name} needs a value`);
      if (spec.choices !== undefined && !spec.choices.includes(raw)) throw new BenchRefusal(`--${spec.name} must be one of ${spec.choices.join(', ')}, not "${raw}"`);
      return raw;
    case 'list': {
      const items = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
      if (items.length === 0) throw new BenchRefusal(`--${spec.name} needs at least one value`);
      for (const item of items) {
        if (spec.choices !== undefined && !spec.choices.includes(item)) throw new BenchRefusal(`--${spec.name}: "${item}" is not one of ${spec.choices.join(', ')}`);
      }
      return items;
    }
    case 'flag-or-string':
      return raw;
    case 'flag-or-numbers':
      return raw.split(',').map((s) => positiveNumber({ ...spec, kind: 'number' }, s.trim()));
    case 'boolean':
      throw new BenchRefusal(`--${spec.name} takes no value`);
  }
}

export interface ParsedArgs {
  readonly values: OptionValues;
  readonly positionals: readonly string[];
  /** Options given on the command line (not defaulted), as typed: recorded in the results. */
  readonly given: readonly string[];
}

/** Parses `--name value`, `--name=value`, `--flag`, `--no-flag`; anything unknown is refused. */
export function parseOptions(argv: readonly string[], specs: readonly OptionSpec[]): ParsedArgs {
  const byName = new Map(specs.map((s) => [s.name, s]));
  const values: Record<string, OptionValue> = {};
  for (const s of specs) values[s.name] = s.default;
  const positionals: string[] = [];
  const given: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--') || arg === '--') {
      if (arg !== '--') positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    let name = eq >= 0 ? arg.slice(2, eq) : arg.slice(2);
    let inline = eq >= 0 ? arg.slice(eq + 1) : undefined;
    let spec = byName.get(name);
    if (spec === undefined && name.startsWith('no-') && byName.get(name.slice(3))?.kind === 'boolean' && inline === undefined) {
      name = name.slice(3);
      spec = byName.get(name);
      inline = 'false';
    }
    if (spec === undefined) {
      const near = specs.filter((s) => s.name.startsWith(name.slice(0, 3))).map((s) => `--${s.name}`);
      throw new BenchRefusal(`unknown option --${name}${near.length > 0 ? ` (did you mean ${near.join(', ')}?)` : ''}; --help lists the options`);
    }
    given.push(name);
    if (spec.kind === 'boolean') {
      if (inline !== undefined && inline !== 'true' && inline !== 'false') throw new BenchRefusal(`--${name} takes no value`);
      values[name] = inline !== 'false';
      continue;
    }
    const next = argv[i + 1];
    if (spec.kind === 'flag-or-numbers' && inline === undefined && (next === undefined || !/^[0-9]/.test(next))) {
      values[name] = true;
      continue;
    }
    if (spec.kind === 'flag-or-string' && inline === undefined && (next === undefined || next.startsWith('--'))) {
      values[name] = true;
      continue;
    }
    let raw = inline;
    if (raw === undefined) {
      if (next === undefined || (next.startsWith('--') && next.length > 2)) throw new BenchRefusal(`--${name} needs a value${spec.unit === undefined ? '' : ` (${spec.unit})`}`);
      raw = next;
      i++;
    }
    values[name] = convert(spec, raw);
  }
  return { values, positionals, given };
}

export function num(values: OptionValues, name: string): number {
  const v = values[name];
  if (typeof v !== 'number') throw new Error(`option --${name} has no number`);
  return v;
}

export function optNum(values: OptionValues, name: string): number | undefined {
  const v = values[name];
  return typeof v === 'number' ? v : undefined;
}

export function str(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export function bool(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

export function list(values: OptionValues, name: string): readonly string[] {
  const v = values[name];
  return Array.isArray(v) ? (v as string[]) : [];
}

function defaultText(s: OptionSpec): string {
  const d = s.default;
  if (d === undefined || d === false) return '';
  if (d === true) return ' (default: on)';
  return ` (default ${Array.isArray(d) ? d.join(',') : String(d)}${s.unit === undefined ? '' : ` ${s.unit}`})`;
}

/** The option table of --help, one option per line, wrapped help aligned. */
export function formatOptions(specs: readonly OptionSpec[]): string {
  const left = specs.map((s) => {
    const value = s.kind === 'boolean' ? '' : s.kind === 'flag-or-numbers' ? ' [R1,R2,..]' : s.kind === 'flag-or-string' ? ` [${s.value ?? 'FILE'}]` : s.value !== undefined ? ` ${s.value}` : s.kind === 'list' ? ` ${s.choices?.join('|') ?? 'A,B'}` : ` ${s.kind === 'string' ? (s.choices?.join('|') ?? 'VALUE') : 'N'}`;
    return `  --${s.name}${value}`;
  });
  const width = Math.min(36, Math.max(...left.map((l) => l.length)) + 2);
  return specs
    .map((s, i) => {
      const l = left[i] as string;
      const text = `${s.help}${defaultText(s)}`;
      return l.length >= width ? `${l}\n${' '.repeat(width)}${text}` : `${l.padEnd(width)}${text}`;
    })
    .join('\n');
}

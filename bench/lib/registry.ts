import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isScenario, type Scenario } from './scenario.js';

/**
 * The scenarios are the files of bench/scenarios/ (compiled next to this one): a new scenario is
 * one more file exporting `scenario`, with nothing to register elsewhere.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
export const SCENARIO_DIR = path.join(here, '..', 'scenarios');

export async function loadScenarios(dir: string = SCENARIO_DIR): Promise<Scenario[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort();
  const found: Scenario[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(path.join(dir, f)).href)) as { scenario?: unknown };
    if (isScenario(mod.scenario)) found.push(mod.scenario);
  }
  const names = new Set<string>();
  for (const s of found) {
    if (names.has(s.name)) throw new Error(`two scenarios are named ${s.name}`);
    names.add(s.name);
  }
  return found.sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
}

import { JsHashingBackend } from '../../../src/adapters/hashing/js-backend.js';
import type { HashBackendName, HashingBackend } from '../../../src/domain/hashing/port.js';

/**
 * The backends a conformance suite runs through: every one that loads here. A backend named in
 * DRIS_REQUIRE_BACKENDS (comma separated) that cannot load is an error, so CI cannot pass by
 * silently skipping it.
 */
export interface AvailableBackends {
  readonly backends: HashingBackend[];
  readonly skipped: { name: HashBackendName; reason: string }[];
}

export function requiredBackends(): Set<string> {
  const raw = process.env['DRIS_REQUIRE_BACKENDS'] ?? '';
  return new Set(raw.split(',').map((s) => s.trim()).filter((s) => s !== ''));
}

export async function availableBackends(): Promise<AvailableBackends> {
  const required = requiredBackends();
  const backends: HashingBackend[] = [];
  const skipped: { name: HashBackendName; reason: string }[] = [];
  for (const name of ['native', 'wasm', 'js'] as const) {
    try {
      backends.push(await load(name));
    } catch (e) {
      const reason = e instanceof Error ? `${e.message}${e.cause instanceof Error ? `: ${e.cause.message}` : ''}` : String(e);
      if (required.has(name)) throw new Error(`backend ${name} is required (DRIS_REQUIRE_BACKENDS) but unavailable: ${reason}`, { cause: e });
      skipped.push({ name, reason });
    }
  }
  return { backends, skipped };
}

async function load(name: HashBackendName): Promise<HashingBackend> {
  if (name === 'js') return new JsHashingBackend();
  const mod = (await import('../../../src/adapters/hashing/select-backend.js').catch((e: unknown) => {
    throw new Error('select-backend is not built', { cause: e });
  })) as { loadHashingBackend: (c: HashBackendName) => Promise<{ backend: HashingBackend }> };
  return (await mod.loadHashingBackend(name)).backend;
}

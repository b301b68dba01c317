import { DrisError } from '../../errors/dris-error.js';
import type { HashBackendName, HashingBackend } from '../../domain/hashing/port.js';

export type HashBackendChoice = 'auto' | HashBackendName;

export interface BackendAttempt {
  readonly name: HashBackendName;
  readonly error: unknown;
}

export interface LoadedHashingBackend {
  readonly backend: HashingBackend;
  /** Backends tried before the chosen one, with why each failed (for the start-up log). */
  readonly tried: BackendAttempt[];
}

const AUTO_ORDER: readonly HashBackendName[] = ['native', 'wasm', 'js'];

async function loadOne(name: HashBackendName): Promise<HashingBackend> {
  switch (name) {
    case 'native': {
      const { NativeHashingBackend } = await import('./native-backend.js');
      return NativeHashingBackend.load();
    }
    case 'wasm': {
      const { WasmHashingBackend } = await import('./wasm-backend.js');
      return WasmHashingBackend.create();
    }
    case 'js': {
      const { JsHashingBackend } = await import('./js-backend.js');
      return new JsHashingBackend();
    }
  }
}

/**
 * Resolves DRIS_HASH_BACKEND. `auto` takes the first of native, wasm, js that loads; an explicit
 * choice that cannot load fails with DrisError('backend_unavailable') carrying the load error.
 */
export async function loadHashingBackend(choice: HashBackendChoice): Promise<LoadedHashingBackend> {
  const tried: BackendAttempt[] = [];
  const order = choice === 'auto' ? AUTO_ORDER : [choice];
  for (const name of order) {
    try {
      return { backend: await loadOne(name), tried };
    } catch (error) {
      tried.push({ name, error });
    }
  }
  const last = tried[tried.length - 1];
  const what = choice === 'auto' ? 'no hashing backend could be loaded' : `hashing backend "${choice}" could not be loaded`;
  throw new DrisError('backend_unavailable', what, {
    cause: choice === 'auto' ? new AggregateError(tried.map((t) => t.error), what) : last?.error,
  });
}

export function parseBackendChoice(raw: string | undefined): HashBackendChoice {
  const v = (raw ?? 'auto').trim().toLowerCase();
  if (v === 'auto' || v === 'native' || v === 'wasm' || v === 'js') return v;
  throw new DrisError('config_invalid', `DRIS_HASH_BACKEND must be auto, native, wasm or js, not "${raw}"`);
}

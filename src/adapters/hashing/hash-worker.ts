import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import type { FieldError } from '../../errors/dris-error.js';
import { splitLeaves } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashingBackend, PreparedPayload } from '../../domain/hashing/port.js';
import type { RecordEnvelope } from '../../domain/records/types.js';
import { NativeHashingBackend, useNativeAddon, type PackedPrepared } from './native-backend.js';
import { loadHashingBackend, type HashBackendChoice } from './select-backend.js';
import { owning } from './transfer.js';

/**
 * Piscina worker of the hashing pool. Each worker resolves its backend once (the same choice as
 * the main thread); buffers travel in both directions as transfers, never as copies.
 */

export type HashTask =
  | { readonly op: 'prepare'; readonly body: Uint8Array; readonly shape: BodyShape }
  | { readonly op: 'recordHashes'; readonly envelopes: readonly RecordEnvelope[] }
  | { readonly op: 'merkleRoot'; readonly leaves: Uint8Array }
  | { readonly op: 'allProofs'; readonly leaves: Uint8Array }
  | { readonly op: 'backend' };

export type PreparedMessage =
  | { readonly kind: 'payloads'; readonly body: Uint8Array; readonly errors: readonly FieldError[]; readonly payloads: readonly (PreparedPayload | null)[] }
  /** From the native backend: canonical texts stay UTF-8 bytes, transferred rather than cloned. */
  | { readonly kind: 'packed'; readonly body: Uint8Array; readonly packed: PackedPrepared };

export interface AllProofsMessage {
  readonly treeSize: number;
  readonly root: Uint8Array;
  readonly hashes: Uint8Array;
  readonly offsets: Uint32Array;
}

const data = (workerData ?? {}) as { backend?: HashBackendChoice; nativeAddon?: string };
useNativeAddon(data.nativeAddon);
const backendReady: Promise<HashingBackend> = loadHashingBackend(data.backend ?? 'auto').then((l) => l.backend);

function moved<T extends object>(value: T, buffers: ArrayBufferLike[]): unknown {
  return move({ [transferableSymbol]: buffers, [valueSymbol]: value } as never);
}

/**
 * Named, not default: piscina loads this file with `require`, and Node 20 wraps a required ES
 * module that has a default export in a facade module. Instantiating that facade has aborted
 * the whole process under a `require` hook (an internal assertion in `CreateRequiredModuleFacade`);
 * a module without a default export is returned as its own namespace and never takes that path.
 */
export async function run(task: HashTask): Promise<unknown> {
  const backend = await backendReady;
  switch (task.op) {
    case 'prepare': {
      if (backend instanceof NativeHashingBackend) {
        const packed = backend.preparePacked(task.body, task.shape);
        const msg: PreparedMessage = { kind: 'packed', body: task.body, packed };
        return moved(msg, [task.body.buffer, packed.texts.buffer, packed.lengths.buffer]);
      }
      const p = backend.prepareBody(task.body, task.shape);
      // Plain objects: a lazy canonical text is materialised here, in the worker.
      const payloads = p.payloads.map((x) => (x === null ? null : { canonical: x.canonical, payloadHash: x.payloadHash }));
      const msg: PreparedMessage = { kind: 'payloads', body: task.body, errors: p.errors, payloads };
      return moved(msg, [task.body.buffer]);
    }
    case 'recordHashes':
      return backend.recordHashes(task.envelopes);
    case 'merkleRoot': {
      const root = owning(backend.merkleRoot(splitLeaves(task.leaves)));
      return moved(root, [root.buffer]);
    }
    case 'allProofs': {
      const all = backend.allProofs(splitLeaves(task.leaves));
      const msg: AllProofsMessage = { treeSize: all.treeSize, root: all.root.slice(), hashes: owning(all.hashes), offsets: owning(all.offsets) };
      const buffers = new Set<ArrayBufferLike>([msg.root.buffer, msg.hashes.buffer, msg.offsets.buffer]);
      return moved(msg, [...buffers]);
    }
    case 'backend':
      return backend.name;
  }
}

import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { DrisError } from '../../errors/dris-error.js';
import type { FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, PreparedBody } from '../../domain/hashing/port.js';
import type { RecordEnvelope } from '../../domain/records/types.js';
import type { AllProofsMessage, HashTask, PreparedMessage } from './hash-worker.js';
import { owning } from './transfer.js';
import { LazyPreparedBody } from './lazy-prepared-body.js';
import { configuredNativeAddon, packedEnvelopeText, packedPayloads } from './native-backend.js';
import type { HashBackendChoice } from './select-backend.js';

export interface HashPoolOptions {
  /** Backend each worker loads (resolved in the worker: `auto` there too). Default `auto`. */
  readonly backend?: HashBackendChoice;
  /** Worker threads. Default: available cores minus one, at least one. */
  readonly threads?: number;
  /** Tasks that may wait for a worker; one more answers DrisError('overloaded'). Default 4 x threads. */
  readonly maxQueue?: number;
  /** Milliseconds an idle worker above the minimum is kept. Default 30 000. */
  readonly idleTimeoutMs?: number;
  /** The native addon file the workers load; default: the one this thread was told (useNativeAddon). */
  readonly nativeAddon?: string;
}

/**
 * Piscina pool for canonicalisation, hashing and Merkle construction. The queue is bounded so
 * overload becomes a 503 rather than unbounded memory, and every buffer is transferred: a body
 * handed to the pool is detached from the caller until the answer brings it back.
 */
export class HashPool {
  private readonly piscina: Piscina<HashTask, unknown>;
  readonly threads: number;
  readonly maxQueue: number;

  constructor(options: HashPoolOptions = {}) {
    this.threads = Math.max(1, options.threads ?? availableParallelism() - 1);
    this.maxQueue = Math.max(0, options.maxQueue ?? 4 * this.threads);
    this.piscina = new Piscina<HashTask, unknown>({
      // Compiled JS only: a .ts worker fails with ERR_UNKNOWN_FILE_EXTENSION.
      filename: new URL('./hash-worker.js', import.meta.url).href,
      name: 'run',
      minThreads: this.threads,
      maxThreads: this.threads,
      maxQueue: this.maxQueue,
      idleTimeout: options.idleTimeoutMs ?? 30_000,
      // The worker threads load the same addon file as this one.
      workerData: { backend: options.backend ?? 'auto', nativeAddon: options.nativeAddon ?? configuredNativeAddon() },
    });
  }

  /** Tasks waiting for a worker. */
  get queueSize(): number {
    return this.piscina.queueSize;
  }

  private async run(task: HashTask, transferList: ArrayBufferLike[] = []): Promise<unknown> {
    // Checked here too so the refusal is immediate and typed, whatever piscina's own wording.
    if (this.piscina.queueSize >= this.maxQueue && this.maxQueue > 0) throw overloaded(this.maxQueue);
    try {
      return await this.piscina.run(task, { transferList: transferList as never });
    } catch (e) {
      if (e instanceof Error && /queue is at limit|no task queue available/i.test(e.message)) throw overloaded(this.maxQueue, e);
      throw e;
    }
  }

  /** Which backend the workers use. */
  async backendName(): Promise<HashBackendName> {
    return (await this.run({ op: 'backend' })) as HashBackendName;
  }

  /**
   * prepareBody in a worker. The body's memory moves to the worker and back (a view that does not
   * own its whole ArrayBuffer, such as a slice of Node's buffer pool, is copied first).
   */
  async prepareBody(body: Uint8Array, shape: BodyShape): Promise<PreparedBody> {
    const own = owning(body);
    const msg = (await this.run({ op: 'prepare', body: own, shape }, [own.buffer])) as PreparedMessage;
    if (msg.kind === 'packed') return new LazyPreparedBody(msg.body, shape, msg.packed.errors, packedPayloads(msg.packed), packedEnvelopeText(msg.packed));
    return new LazyPreparedBody(msg.body, shape, msg.errors, msg.payloads);
  }

  async recordHashes(envelopes: readonly RecordEnvelope[]): Promise<string[]> {
    return (await this.run({ op: 'recordHashes', envelopes })) as string[];
  }

  /** Root of leaves of 32 bytes each, packed back to back; the buffer is transferred. */
  async merkleRoot(packedLeaves: Uint8Array): Promise<Uint8Array> {
    const own = owning(packedLeaves);
    return (await this.run({ op: 'merkleRoot', leaves: own }, [own.buffer])) as Uint8Array;
  }

  /** Root and every audit path of leaves of 32 bytes each, packed back to back (transferred). */
  async allProofs(packedLeaves: Uint8Array): Promise<FlatProofs> {
    const own = owning(packedLeaves);
    return (await this.run({ op: 'allProofs', leaves: own }, [own.buffer])) as AllProofsMessage;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }
}

function overloaded(maxQueue: number, cause?: unknown): DrisError {
  return new DrisError('overloaded', `hashing pool is saturated (${maxQueue} tasks queued)`, cause === undefined ? {} : { cause });
}

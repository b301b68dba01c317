import type { FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, HashingBackend, PreparedBody } from '../../domain/hashing/port.js';
import type { RecordEnvelope } from '../../domain/records/types.js';
import { HashPool, type HashPoolOptions } from './hash-pool.js';
import { loadHashingBackend, type BackendAttempt, type HashBackendChoice } from './select-backend.js';

/**
 * Bodies below this size hash inline on the calling thread, above it in the pool. Set where inline
 * hashing costs about one pool round trip (~120-150 µs measured by bench/hash-bench on the 2-core
 * machine): below, the pool only adds latency; above, the work is worth moving off the event
 * loop. Native prepares a body ~8x faster than js inline, so its crossover is higher. See
 * docs/hashing.md.
 */
export const DEFAULT_INLINE_THRESHOLD_BYTES: Readonly<Record<HashBackendName, number>> = {
  native: 128 * 1024,
  wasm: 16 * 1024,
  js: 16 * 1024,
};

/** Leaf count from which Merkle work goes to the pool (1 000 leaves take < 1 ms inline even in JS). */
export const DEFAULT_POOL_MIN_LEAVES = 4096;

export interface HashingServiceOptions {
  /** Backend used inline (and, by choice name, in the workers). */
  readonly backend: HashingBackend;
  /** Pool for large work; absent means everything runs inline. */
  readonly pool?: HashPool | undefined;
  /** Body size from which prepareBody goes to the pool. Default DEFAULT_INLINE_THRESHOLD_BYTES[backend]. */
  readonly inlineThresholdBytes?: number;
  /** Leaf count from which Merkle work goes to the pool. Default DEFAULT_POOL_MIN_LEAVES. */
  readonly poolMinLeaves?: number;
  /** Envelope count from which recordHashes goes to the pool. Default 2 000. */
  readonly poolMinEnvelopes?: number;
}

export interface CreateHashingServiceOptions extends HashPoolOptions {
  readonly backend?: HashBackendChoice;
  /** Whether to start a worker pool. Default true. */
  readonly pool?: boolean;
  readonly inlineThresholdBytes?: number;
  readonly poolMinLeaves?: number;
}

/** The hashing entry point of the application: inline for small work, pooled for large work. */
export class HashingService {
  readonly backend: HashingBackend;
  readonly pool: HashPool | undefined;
  readonly inlineThresholdBytes: number;
  readonly poolMinLeaves: number;
  readonly poolMinEnvelopes: number;
  /** Backends tried before the chosen one (for the start-up log). */
  tried: readonly BackendAttempt[] = [];

  constructor(options: HashingServiceOptions) {
    this.backend = options.backend;
    this.pool = options.pool;
    this.inlineThresholdBytes = options.inlineThresholdBytes ?? DEFAULT_INLINE_THRESHOLD_BYTES[options.backend.name];
    this.poolMinLeaves = options.poolMinLeaves ?? DEFAULT_POOL_MIN_LEAVES;
    this.poolMinEnvelopes = options.poolMinEnvelopes ?? 2000;
  }

  /**
   * Resolves the backend (DRIS_HASH_BACKEND semantics: an explicit choice that cannot load throws
   * DrisError('backend_unavailable')) and starts the pool with the same backend in its workers.
   */
  static async create(options: CreateHashingServiceOptions = {}): Promise<HashingService> {
    const choice = options.backend ?? 'auto';
    const loaded = await loadHashingBackend(choice);
    const pool = options.pool === false ? undefined : new HashPool({ ...options, backend: loaded.backend.name });
    const service = new HashingService({
      backend: loaded.backend,
      pool,
      ...(options.inlineThresholdBytes === undefined ? {} : { inlineThresholdBytes: options.inlineThresholdBytes }),
      ...(options.poolMinLeaves === undefined ? {} : { poolMinLeaves: options.poolMinLeaves }),
    });
    service.tried = loaded.tried;
    return service;
  }

  get backendName(): HashBackendName {
    return this.backend.name;
  }

  /**
   * Parses, checks and hashes a request body. Above the inline threshold the body is transferred
   * to a worker: the caller must not use `body` afterwards (read the result's `value` instead).
   * Throws DrisError('overloaded') when the pool's queue is full.
   */
  async prepareBody(body: Uint8Array, shape: BodyShape): Promise<PreparedBody> {
    if (this.pool === undefined || body.byteLength < this.inlineThresholdBytes) return this.backend.prepareBody(body, shape);
    return this.pool.prepareBody(body, shape);
  }

  /**
   * prepareBody answered without a promise when the body is hashed inline: what ingestion calls,
   * so a small body costs no turn of the event loop.
   */
  prepareBodyNow(body: Uint8Array, shape: BodyShape): PreparedBody | Promise<PreparedBody> {
    if (this.pool === undefined || body.byteLength < this.inlineThresholdBytes) return this.backend.prepareBody(body, shape);
    return this.pool.prepareBody(body, shape);
  }

  /** recordHashes answered without a promise when the envelopes are hashed inline. */
  recordHashesNow(envelopes: readonly RecordEnvelope[]): string[] | Promise<string[]> {
    if (this.pool === undefined || envelopes.length < this.poolMinEnvelopes) return this.backend.recordHashes(envelopes);
    return this.pool.recordHashes(envelopes);
  }

  async recordHashes(envelopes: readonly RecordEnvelope[]): Promise<string[]> {
    if (this.pool === undefined || envelopes.length < this.poolMinEnvelopes) return this.backend.recordHashes(envelopes);
    return this.pool.recordHashes(envelopes);
  }

  /** Root of record hashes (32 bytes each). */
  async merkleRoot(leaves: readonly Uint8Array[]): Promise<Uint8Array> {
    if (this.pool === undefined || leaves.length < this.poolMinLeaves || !all32(leaves)) return this.backend.merkleRoot(leaves);
    return this.pool.merkleRoot(pack(leaves));
  }

  /** Root and every audit path in one call. */
  async allProofs(leaves: readonly Uint8Array[]): Promise<FlatProofs> {
    if (this.pool === undefined || leaves.length < this.poolMinLeaves || !all32(leaves)) return this.backend.allProofs(leaves);
    return this.pool.allProofs(pack(leaves));
  }

  inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
    return this.backend.inclusionProof(leaves, index);
  }

  verifyInclusion(leafHash: Uint8Array, index: number, treeSize: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
    return this.backend.verifyInclusion(leafHash, index, treeSize, proof, root);
  }

  async close(): Promise<void> {
    await this.pool?.close();
  }
}

function all32(leaves: readonly Uint8Array[]): boolean {
  return leaves.every((l) => l.length === 32);
}

function pack(leaves: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(leaves.length * 32);
  for (let i = 0; i < leaves.length; i++) out.set(leaves[i]!, i * 32);
  return out;
}

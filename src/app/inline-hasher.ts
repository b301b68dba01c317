import type { BodyShape, HashingBackend, PreparedBody } from '../domain/hashing/port.js';
import type { RecordEnvelope } from '../domain/records/types.js';
import type { RecordHasher } from './ingest-service.js';

/** Hashes on the calling thread; the pool-backed HashingService replaces it under load. */
export class InlineHasher implements RecordHasher {
  constructor(readonly backend: HashingBackend) {}

  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody {
    return this.backend.prepareBody(body, shape);
  }

  recordHashes(envelopes: readonly RecordEnvelope[]): string[] {
    return this.backend.recordHashes(envelopes);
  }
}

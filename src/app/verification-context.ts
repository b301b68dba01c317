import type { HashingBackend } from '../domain/hashing/port.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { EvidenceIndex } from '../domain/verification/ports.js';
import type { Logger } from '../util/logger.js';
import type { VerificationReads } from './verification-reads.js';
import type { VerificationResults } from './verification-results.js';

/** What every verification use case (verify-*.ts) works with; the Verifier builds it once. */
export interface VerifyContext {
  readonly hashing: HashingBackend;
  readonly evidence: EvidenceIndex;
  readonly store: PipelineStore;
  readonly reads: VerificationReads;
  readonly results: VerificationResults;
  readonly now: () => number;
  readonly log: Logger;
}

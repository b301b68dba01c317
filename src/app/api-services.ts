import type { AuditLog } from '../domain/audit/ports.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { RecordIndex } from '../domain/records/ports.js';
import type { EvidenceIndex, VerificationHistory } from '../domain/verification/ports.js';
import type { EvidenceAccess } from './evidence-access.js';
import type { HealthMonitor } from './health.js';
import type { IngestService } from './ingest-service.js';
import type { KeyAdmin } from './key-admin.js';
import type { Verifier } from './verifier.js';
import { KeyAdministration } from './keys/key-administration.js';
import type { RetryingAnchorer } from './snapshots/retry-snapshot.js';
import type { EventPublisher } from './events.js';

/**
 * The application services the HTTP routes call, one use case each, made from the ports the
 * composition root opened. Routes parse, call one of these, and render.
 */

export interface ApiServiceDeps {
  readonly ingest: IngestService;
  readonly index: RecordIndex;
  readonly store: PipelineStore;
  /** null when this process does not anchor (a retry is then written to the store). */
  readonly anchorer: RetryingAnchorer | null;
  readonly audit: AuditLog;
  readonly evidence: EvidenceIndex;
  readonly history: VerificationHistory;
  readonly policies: EvidenceAccess;
  readonly verifier: Verifier;
  readonly health: HealthMonitor;
  /** Where a retry written to the store (no anchorer in this process) announces its moves. */
  readonly events?: EventPublisher;
}

/** What the public routes use: the ports, each use case taking the ones it needs. */
export type ApiServices = ApiServiceDeps;

export interface AdminServiceDeps {
  readonly keys: KeyAdmin;
  readonly health: HealthMonitor;
  readonly audit: AuditLog;
  readonly policies: EvidenceAccess;
  /** Called after a key is revoked or rotated, so this process stops accepting it at once. */
  readonly onKeyChanged: (keyId: string) => void;
}

export interface AdminServices {
  readonly keys: KeyAdministration;
  readonly health: HealthMonitor;
  readonly audit: AuditLog;
  readonly policies: EvidenceAccess;
}

export function createAdminServices(deps: AdminServiceDeps): AdminServices {
  return { keys: new KeyAdministration(deps.keys, deps.onKeyChanged), health: deps.health, audit: deps.audit, policies: deps.policies };
}

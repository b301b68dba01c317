import type { VerificationResult, VerifyRecordRequest } from '../../domain/verification/types.js';
import type { EvidenceAccess, WithheldRecord } from '../evidence-access.js';
import { carriesEvidence, gatedResult } from '../evidence/evidence-gates.js';
import type { Caller } from '../tenancy.js';
import type { Verifier } from '../verifier.js';

export interface VerifyDeps {
  readonly verifier: Verifier;
  readonly policies: EvidenceAccess;
}

/** A record verified, its evidence shown as the tenant's retrieval policy lets the caller see it. */
export async function verifyRecord(deps: VerifyDeps, caller: Caller, req: VerifyRecordRequest): Promise<VerificationResult> {
  const result = await deps.verifier.verifyRecord(caller, req);
  if (!carriesEvidence(result)) return result;
  const withheld: WithheldRecord[] = [];
  const answer = gatedResult(await deps.policies.gate(caller.principal, result.tenantId), result, withheld);
  await deps.policies.reportWithheld(caller, result.tenantId, 'verify/record', withheld, 'policy');
  return answer;
}

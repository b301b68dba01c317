import type { VerifyPayloadRequest, VerifyPayloadResponse } from '../../domain/verification/types.js';
import type { WithheldRecord } from '../evidence-access.js';
import { carriesEvidence, gatedResult } from '../evidence/evidence-gates.js';
import type { Caller } from '../tenancy.js';
import type { VerifyDeps } from './verify-record.js';

/** Records of the tenant carrying a hash, verified; evidence shown as the retrieval policy allows. */
export async function verifyPayload(deps: VerifyDeps, caller: Caller, req: VerifyPayloadRequest): Promise<VerifyPayloadResponse> {
  const answer = await deps.verifier.verifyPayload(caller, req);
  if (!answer.results.some(carriesEvidence)) return answer;
  const gate = await deps.policies.gate(caller.principal, answer.tenantId);
  const withheld: WithheldRecord[] = [];
  const results = answer.results.map((r) => gatedResult(gate, r, withheld));
  await deps.policies.reportWithheld(caller, answer.tenantId, 'verify/payload', withheld, 'policy');
  return withheld.length === 0 ? answer : { ...answer, results };
}

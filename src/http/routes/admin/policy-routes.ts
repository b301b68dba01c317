import typia from 'typia';
import { getRetrievalPolicy } from '../../../app/evidence/get-retrieval-policy.js';
import { setRetrievalPolicy } from '../../../app/evidence/set-retrieval-policy.js';
import type { RetrievalPolicyView } from '../../../app/views.js';
import type { RetrievalPolicy } from '../../../domain/evidence/policy.js';
import { DrisError } from '../../../errors/dris-error.js';
import { bodyOf, pathParam } from '../../params.js';
import { json, reply, route } from '../../route-spec.js';
import { admin } from '../bind.js';

/** Operators' retrieval-policy administration, on the administration listener. */

const validatePolicy = typia.createValidate<RetrievalPolicy>();
const TENANT = { tenantId: 'Tenant identifier.' };
const view = json('The policy in force.', typia.json.schema<RetrievalPolicyView, '3.1'>());
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const GetRetrievalPolicy = route('GET /admin/v1/tenants/:tenantId/retrieval-policy', 'GetRetrievalPolicy', 'Admin', "A tenant's retrieval policy (operators)", {
  listener: 'admin', auth: 'admin',
  pathParams: TENANT,
  responses: { 200: { ...view, description: 'The policy, or the default one (isDefault).' } },
  bind: admin((s) => async (ctx) => reply<RetrievalPolicyView>(200, await getRetrievalPolicy(s.policies, pathParam(ctx, 'tenantId')))),
});

export const PutRetrievalPolicy = route('PUT /admin/v1/tenants/:tenantId/retrieval-policy', 'PutRetrievalPolicy', 'Admin', "Set a tenant's retrieval policy (operators)", {
  listener: 'admin', auth: 'admin',
  description: 'Rules are read in order; the first that matches decides, else defaultEffect. The change is an audit entry (policy.set) of the tenant.',
  pathParams: { tenantId: { description: 'Tenant identifier.', pattern: TENANT_ID.source } },
  body: { schema: typia.json.schema<RetrievalPolicy, '3.1'>(), required: true, limit: { bytes: 256 * 1024 }, example: { defaultEffect: 'deny', rules: [{ effect: 'allow', clients: ['auditor'], scopes: ['evidence'] }] } },
  responses: { 200: { ...view, description: 'The stored policy.' } },
  bind: admin((s) => async (ctx) => {
    const tenantId = pathParam(ctx, 'tenantId');
    if (!TENANT_ID.test(tenantId)) throw new DrisError('validation_failed', 'invalid tenant', { fields: [{ path: 'tenantId', code: 'invalid_format', message: 'must be a tenant identifier' }] });
    return reply<RetrievalPolicyView>(200, await setRetrievalPolicy(s, tenantId, bodyOf(ctx, validatePolicy), ctx.correlationId));
  }),
});

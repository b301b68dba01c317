import { randomBytes } from 'node:crypto';
import typia from 'typia';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import type { Verifier } from '../app/verifier.js';
import type { EvidenceAccess, WithheldRecord } from '../app/evidence-access.js';
import type { AuditEvent, AuditLog, AuditQuery } from '../domain/audit/ports.js';
import {
  decide,
  DEFAULT_POLICY,
  type RetrievalControlsRequest,
  type RetrievalControlsResponse,
  type RetrievalDecisionView,
  type RetrievalPolicy,
  type RetrievalScope,
  type StoredPolicy,
} from '../domain/evidence/policy.js';
import { VERIFICATION_EVIDENCE, withhold, type EvidenceGate } from '../domain/evidence/withhold.js';
import type { EvidenceIndex } from '../domain/verification/ports.js';
import type { VerificationResult, VerifyPayloadRequest, VerifyRecordRequest } from '../domain/verification/types.js';
import type { VerificationHistory } from '../domain/verification/ports.js';
import { checked, ijsonBody, listingOf, opt, optional, principalOf, tenantOf, tenantsOf } from './params.js';
import type { RequestContext, Route } from './router.js';

/**
 * Verification, receipts, audit and evidence access. Reads are scoped to the key's tenants: a
 * tenantId the key may not act for answers 403; another tenant's snapshot or record is simply
 * not found (404), exactly as an unknown one.
 */

export interface VerifyRouteDeps {
  readonly verifier: Verifier;
  readonly evidence: EvidenceIndex;
  readonly history: VerificationHistory;
  readonly audit: AuditLog;
  /** Retrieval policies (cached): they decide what evidence each answer may carry. */
  readonly policies: EvidenceAccess;
  readonly maxBodyBytes: number;
  readonly now?: () => number;
}

export interface PolicyAdminRouteDeps {
  readonly audit: AuditLog;
  readonly policies: EvidenceAccess;
  readonly now?: () => number;
}

const validateVerifyRecord = typia.createValidate<VerifyRecordRequest>();
const validateVerifyPayload = typia.createValidate<VerifyPayloadRequest>();
const validateRetrieval = typia.createValidate<RetrievalControlsRequest>();
const validatePolicy = typia.createValidate<RetrievalPolicy>();

const HISTORY_OUTCOMES = ['pass', 'fail', 'pending', 'error'];

function caller(ctx: RequestContext): { principal: ReturnType<typeof principalOf>; correlationId: string } {
  return { principal: principalOf(ctx), correlationId: ctx.correlationId };
}

function invalid(fields: FieldError[]): void {
  if (fields.length > 0) throw new DrisError('validation_failed', 'invalid query', { fields });
}

const carriesEvidence = (r: VerificationResult): boolean => VERIFICATION_EVIDENCE.some((m) => r[m] !== undefined);

/** A verification result as the policy lets this caller see it; `withheld` collects what was removed. */
function gatedResult(gate: EvidenceGate, r: VerificationResult, withheld: WithheldRecord[]): VerificationResult {
  if (!carriesEvidence(r) || r.collection === undefined) return r;
  if (gate({ database: r.database ?? '', collection: r.collection }).allowed) return r;
  withheld.push({ collection: r.collection, recordId: r.recordId });
  return withhold(r, VERIFICATION_EVIDENCE) as VerificationResult;
}

/** Evidence members of audit details (the ingest event names the recordHash). */
const AUDIT_EVIDENCE = ['recordHash', 'payloadHash', 'salt', 'merkleProof', 'leafIndex', 'treeSize'];

/**
 * An audit event as the policy lets this caller see it. The record is named by the event's
 * resource, `record:<collection>/<recordId>`, where both names may hold `/`: every reading of it
 * must be allowed, so an ambiguous name can only withhold more.
 */
function gatedAuditEvent(gate: EvidenceGate, e: AuditEvent, withheld: WithheldRecord[]): AuditEvent {
  const detail = e.detail;
  if (detail === undefined || !AUDIT_EVIDENCE.some((m) => detail[m] !== undefined) || !e.resource.startsWith('record:')) return e;
  const named = e.resource.slice('record:'.length);
  const database = typeof detail['database'] === 'string' ? detail['database'] : '';
  let allowed = true;
  for (let i = named.indexOf('/'); i >= 0 && allowed; i = named.indexOf('/', i + 1)) allowed = gate({ database, collection: named.slice(0, i) }).allowed;
  if (allowed) return e;
  const cut = named.indexOf('/');
  withheld.push({ collection: cut < 0 ? named : named.slice(0, cut), recordId: cut < 0 ? '' : named.slice(cut + 1) });
  const kept: Record<string, unknown> = { ...detail };
  for (const m of AUDIT_EVIDENCE) delete kept[m];
  kept['evidenceWithheld'] = true;
  return { ...e, detail: kept };
}

export function verifyRoutes(deps: VerifyRouteDeps): Route[] {
  const now = deps.now ?? Date.now;

  const policyOf = async (tenantId: string): Promise<StoredPolicy | null> => deps.policies.get(tenantId);

  const accessEvent = (ctx: RequestContext, tenantId: string, resource: string, allowed: boolean, detail: Record<string, unknown>): AuditEvent => {
    const p = principalOf(ctx);
    return {
      eventId: `acc_${randomBytes(10).toString('hex')}`,
      atMs: now(),
      tenantId,
      clientId: p.clientId,
      keyId: p.keyId,
      action: 'evidence.access',
      resource,
      outcome: allowed ? 'allowed' : 'denied',
      correlationId: ctx.correlationId,
      detail,
    };
  };

  return [
    {
      method: 'POST',
      pattern: '/api/v1/verify/record',
      operationId: 'VerifyRecord',
      auth: 'apiKey',
      maxBodyBytes: deps.maxBodyBytes,
      handle: async (ctx) => {
        const body = checked(ijsonBody(ctx), validateVerifyRecord);
        if (body.payload !== undefined && Array.isArray(body.payload)) {
          throw new DrisError('validation_failed', 'invalid request', { fields: [{ path: 'payload', code: 'invalid_type', message: 'must be an object' }] });
        }
        const c = caller(ctx);
        const result = await deps.verifier.verifyRecord(c, body);
        if (!carriesEvidence(result)) return { status: 200, body: result };
        const withheld: WithheldRecord[] = [];
        const answer = gatedResult(await deps.policies.gate(c.principal, result.tenantId), result, withheld);
        await deps.policies.reportWithheld(c, result.tenantId, 'verify/record', withheld, 'policy');
        return { status: 200, body: answer };
      },
    },
    {
      method: 'POST',
      pattern: '/api/v1/verify/payload',
      operationId: 'VerifyPayload',
      auth: 'apiKey',
      maxBodyBytes: deps.maxBodyBytes,
      handle: async (ctx) => {
        const c = caller(ctx);
        const answer = await deps.verifier.verifyPayload(c, checked(ijsonBody(ctx), validateVerifyPayload));
        if (!answer.results.some(carriesEvidence)) return { status: 200, body: answer };
        const gate = await deps.policies.gate(c.principal, answer.tenantId);
        const withheld: WithheldRecord[] = [];
        const results = answer.results.map((r) => gatedResult(gate, r, withheld));
        await deps.policies.reportWithheld(c, answer.tenantId, 'verify/payload', withheld, 'policy');
        return { status: 200, body: withheld.length === 0 ? answer : { ...answer, results } };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/verify/snapshot/:snapshotId',
      operationId: 'VerifySnapshot',
      auth: 'apiKey',
      handle: async (ctx) => ({ status: 200, body: await deps.verifier.verifySnapshot(caller(ctx), ctx.params['snapshotId'] ?? '', tenantsOf(ctx)) }),
    },
    {
      method: 'GET',
      pattern: '/api/v1/verify/history',
      operationId: 'GetVerificationHistory',
      auth: 'apiKey',
      handle: async (ctx) => {
        const l = listingOf(ctx, ['recordId', 'collection', 'snapshotId', 'outcome'] as const, (q, fields) => {
          const outcome = optional(q, 'outcome');
          if (outcome !== undefined && !HISTORY_OUTCOMES.includes(outcome)) fields.push({ path: 'outcome', code: 'invalid_enum', message: `must be one of ${HISTORY_OUTCOMES.join(', ')}` });
        });
        const page = await deps.history.query({ tenantId: l.tenantId, limit: l.limit, ...l.window, ...l.filters });
        return { status: 200, body: { items: page.items, nextCursor: page.nextCursor } };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/audit/history',
      operationId: 'GetAuditHistory',
      auth: 'apiKey',
      handle: async (ctx) => {
        const l = listingOf(ctx, ['action', 'keyId', 'clientId'] as const);
        const query: AuditQuery = { tenantId: l.tenantId, limit: l.limit, ...l.window, ...l.filters };
        const p = principalOf(ctx);
        const [page, gate] = await Promise.all([deps.audit.query(query), deps.policies.gate(p, l.tenantId)]);
        const withheld: WithheldRecord[] = [];
        const events = page.items.map((e) => gatedAuditEvent(gate, e, withheld));
        await deps.policies.reportWithheld({ principal: p, correlationId: ctx.correlationId }, l.tenantId, 'audit/history', withheld, 'policy');
        return {
          status: 200,
          body: {
            items: events.map((e) => ({
              eventId: e.eventId,
              at: new Date(e.atMs).toISOString(),
              tenantId: e.tenantId,
              actor: { tenantId: e.tenantId, clientId: e.clientId, keyId: e.keyId },
              action: e.action,
              resource: e.resource,
              outcome: e.outcome,
              correlationId: e.correlationId,
              detail: e.detail ?? {},
            })),
            nextCursor: page.nextCursor,
          },
        };
      },
    },
    {
      method: 'POST',
      pattern: '/api/v1/evidence/retrieval-controls',
      operationId: 'CheckRetrievalControls',
      auth: 'apiKey',
      maxBodyBytes: deps.maxBodyBytes,
      handle: async (ctx) => {
        const body = checked(ijsonBody(ctx), validateRetrieval);
        const p = principalOf(ctx);
        const tenantId = tenantOf(ctx, body.tenantId);
        const scope: RetrievalScope = body.scope ?? 'evidence';
        const stored = await policyOf(tenantId);
        const policy = stored?.policy ?? DEFAULT_POLICY;
        const decisions: RetrievalDecisionView[] = [];
        const events: AuditEvent[] = [];
        const found = await Promise.all(
          body.records.map((r) =>
            deps.evidence.findRecord({ tenantId, collection: r.collection, recordId: r.recordId, ...opt('database', r.database), ...opt('recordVersion', r.recordVersion) }),
          ),
        );
        body.records.forEach((r, index) => {
          const versions = found[index] ?? [];
          const record = versions.at(-1);
          const d = record === undefined ? { allowed: false, reason: 'not_found' as const, ruleIndex: null } : decide(policy, { clientId: p.clientId, level: p.level }, record.envelope, scope);
          decisions.push({
            index,
            database: record?.envelope.database ?? r.database ?? null,
            collection: r.collection,
            recordId: r.recordId,
            recordVersion: record?.envelope.recordVersion ?? r.recordVersion ?? null,
            decision: d.allowed ? 'allowed' : 'denied',
            reason: d.reason,
            ruleIndex: d.ruleIndex,
            found: record !== undefined,
          });
          events.push(
            accessEvent(ctx, tenantId, `record:${r.collection}/${r.recordId}`, d.allowed, {
              scope,
              reason: d.reason,
              ruleIndex: d.ruleIndex,
              ...(body.purpose === undefined ? {} : { purpose: body.purpose }),
            }),
          );
        });
        await deps.audit.append(events);
        const allowed = decisions.filter((d) => d.decision === 'allowed').length;
        const answer: RetrievalControlsResponse = {
          tenantId,
          clientId: p.clientId,
          keyId: p.keyId,
          accessLevel: p.level,
          scope,
          evaluatedAt: new Date(now()).toISOString(),
          policyUpdatedAt: stored === null ? null : new Date(stored.updatedAtMs).toISOString(),
          allowed,
          denied: decisions.length - allowed,
          decisions,
        };
        return { status: 200, body: answer };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/receipts/record',
      operationId: 'GetRecordReceipt',
      auth: 'apiKey',
      handle: async (ctx) => {
        const q = ctx.query;
        const fields: FieldError[] = [];
        const collection = optional(q, 'collection');
        const recordId = optional(q, 'recordId');
        if (collection === undefined) fields.push({ path: 'collection', code: 'required', message: 'is required' });
        if (recordId === undefined) fields.push({ path: 'recordId', code: 'required', message: 'is required' });
        const includeRaw = optional(q, 'includePayload');
        if (includeRaw !== undefined && includeRaw !== 'true' && includeRaw !== 'false') fields.push({ path: 'includePayload', code: 'invalid_type', message: 'must be true or false' });
        invalid(fields);
        if (collection === undefined || recordId === undefined) throw new DrisError('internal_error', 'unreachable');
        const includePayload = includeRaw === 'true';
        const tenantId = tenantOf(ctx, q.get('tenantId'));
        const p = principalOf(ctx);
        const { receipt, record } = await deps.verifier.receipt(tenantId, { collection, recordId, ...opt('database', optional(q, 'database')), ...opt('recordVersion', optional(q, 'recordVersion')) });
        const policy = (await policyOf(tenantId))?.policy ?? DEFAULT_POLICY;
        const scopes: RetrievalScope[] = includePayload ? ['evidence', 'payload'] : ['evidence'];
        const verdicts = scopes.map((scope) => ({ scope, ...decide(policy, { clientId: p.clientId, level: p.level }, record.envelope, scope) }));
        const resource = `record:${collection}/${recordId}`;
        await deps.audit.append(verdicts.map((v) => accessEvent(ctx, tenantId, resource, v.allowed, { scope: v.scope, reason: v.reason, ruleIndex: v.ruleIndex, via: 'receipt' })));
        const denied = verdicts.find((v) => !v.allowed);
        if (denied !== undefined) {
          throw new DrisError('forbidden_client', `the tenant's retrieval policy does not let this client retrieve this record's ${denied.scope}`, {
            extra: { scope: denied.scope, reason: denied.reason },
          });
        }
        let body: Record<string, unknown> = { ...receipt };
        if (includePayload) {
          const text = await deps.evidence.payloadOf(tenantId, record.ingestId, record.acceptedAtMs);
          if (text === null) throw new DrisError('not_found', 'no such record');
          body = { ...receipt, payload: JSON.parse(text) as Record<string, unknown> };
        }
        const name = `dris-receipt-${receipt.collection}-${receipt.recordId}-v${receipt.recordVersion}.json`.replace(/[^A-Za-z0-9._-]/g, '_');
        return { status: 200, body, headers: { 'Content-Disposition': `attachment; filename="${name}"` } };
      },
    },
  ];
}

/** Operators' retrieval-policy administration: routes of the administration listener only. */
export function policyAdminRoutes(deps: PolicyAdminRouteDeps): Route[] {
  const now = deps.now ?? Date.now;
  return [
    {
      method: 'GET',
      pattern: '/admin/v1/tenants/:tenantId/retrieval-policy',
      operationId: 'GetRetrievalPolicy',
      auth: 'admin',
      handle: async (ctx) => {
        const tenantId = ctx.params['tenantId'] ?? '';
        const stored = await deps.policies.get(tenantId);
        return {
          status: 200,
          body: { tenantId, policy: stored?.policy ?? DEFAULT_POLICY, isDefault: stored === null, updatedAt: stored === null ? null : new Date(stored.updatedAtMs).toISOString() },
        };
      },
    },
    {
      method: 'PUT',
      pattern: '/admin/v1/tenants/:tenantId/retrieval-policy',
      operationId: 'PutRetrievalPolicy',
      auth: 'admin',
      maxBodyBytes: 256 * 1024,
      handle: async (ctx) => {
        const tenantId = ctx.params['tenantId'] ?? '';
        if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(tenantId)) {
          throw new DrisError('validation_failed', 'invalid tenant', { fields: [{ path: 'tenantId', code: 'invalid_format', message: 'must be a tenant identifier' }] });
        }
        const policy = checked(ijsonBody(ctx), validatePolicy);
        const stored = await deps.policies.put(tenantId, policy, 'operator');
        await deps.audit.append([
          {
            eventId: `pol_${randomBytes(10).toString('hex')}`,
            atMs: now(),
            tenantId,
            clientId: 'operator',
            keyId: 'admin',
            action: 'policy.set',
            resource: `retrieval-policy:${tenantId}`,
            outcome: 'success',
            correlationId: ctx.correlationId,
            detail: { rules: policy.rules.length, defaultEffect: policy.defaultEffect },
          },
        ]);
        return { status: 200, body: { tenantId, policy: stored.policy, isDefault: false, updatedAt: new Date(stored.updatedAtMs).toISOString() } };
      },
    },
  ];
}

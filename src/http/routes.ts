import { DrisError, type FieldError } from '../errors/dris-error.js';
import { assertTenant } from '../app/authenticator.js';
import type { IngestService } from '../app/ingest-service.js';
import type { KeyAdmin } from '../app/key-admin.js';
import type { HealthMonitor } from '../app/health.js';
import type { EvidenceAccess } from '../app/evidence-access.js';
import { SUMMARY_EVIDENCE, withhold } from '../domain/evidence/withhold.js';
import type { RecordIndex } from '../domain/records/ports.js';
import { ACCESS_LEVELS, type AccessLevel } from '../domain/keys/types.js';
import type { RecordQuery, RecordSummary } from '../domain/records/types.js';
import type { RequestContext, Route } from './router.js';
import type { SwaggerAssets } from './swagger.js';
import { principalOf, timeParam } from './params.js';

export interface RouteDeps {
  readonly ingest: IngestService | null;
  readonly index: RecordIndex;
  readonly health: HealthMonitor;
  /** Retrieval policies: what of a listed record's evidence the caller may see. */
  readonly evidence: EvidenceAccess;
  readonly swagger: SwaggerAssets;
  readonly maxBodyBytes: number;
  readonly maxBulkBodyBytes: number;
}

export interface AdminRouteDeps {
  readonly keys: KeyAdmin;
  readonly health: HealthMonitor;
  /** Called after a key is revoked or rotated here, so this process stops accepting it at once. */
  readonly onKeyChanged: (keyId: string) => void;
}

/** Health answers 503 unless every component is ok; the report is renewed every second. */
const HEALTH_RETRY_AFTER = { 'Retry-After': '1' };

function jsonBody(ctx: RequestContext): Record<string, unknown> {
  let value: unknown;
  try {
    value = ctx.body.length === 0 ? {} : JSON.parse(ctx.body.toString('utf8'));
  } catch (err) {
    throw new DrisError('invalid_json', 'the body is not valid JSON', { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DrisError('validation_failed', 'the body must be an object', { fields: [{ path: '(body)', code: 'invalid_type', message: 'must be an object' }] });
  }
  return value as Record<string, unknown>;
}

export function buildRoutes(deps: RouteDeps): Route[] {
  const ingestService = (): IngestService => {
    if (deps.ingest === null) throw new DrisError('not_implemented', 'this process does not run the api role');
    return deps.ingest;
  };
  const api = (r: Omit<Route, 'auth'>): Route => ({ ...r, auth: 'apiKey' });

  return [
    api({
      method: 'POST',
      pattern: '/api/v1/records',
      operationId: 'IngestRecord',
      maxBodyBytes: deps.maxBodyBytes,
      handle: async (ctx) => {
        const out = await ingestService().ingestOne(principalOf(ctx), ctx.body, ctx.headers.idempotencyKey, ctx.correlationId);
        return { status: out.status, body: out.body };
      },
    }),
    api({
      method: 'POST',
      pattern: '/api/v1/records/bulk',
      operationId: 'BulkIngestRecords',
      maxBodyBytes: deps.maxBulkBodyBytes,
      handle: async (ctx) => {
        const out = await ingestService().ingestBulk(principalOf(ctx), ctx.body, ctx.headers.idempotencyKey, ctx.correlationId);
        return { status: out.status, body: out.body };
      },
    }),
    api({
      method: 'GET',
      pattern: '/api/v1/records',
      operationId: 'QueryRecords',
      handle: async (ctx) => {
        const q = ctx.query;
        const fields: FieldError[] = [];
        const tenantId = q.get('tenantId');
        if (tenantId === null || tenantId === '') fields.push({ path: 'tenantId', code: 'required', message: 'is required' });
        const limitRaw = q.get('limit');
        let limit = 100;
        if (limitRaw !== null) {
          limit = Number(limitRaw);
          if (!/^\d+$/.test(limitRaw) || limit < 1 || limit > 1000) fields.push({ path: 'limit', code: 'out_of_range', message: 'must be an integer from 1 to 1000' });
        }
        const fromMs = timeParam(q, 'from', fields);
        const toMs = timeParam(q, 'to', fields);
        if (fields.length > 0 || tenantId === null) throw new DrisError('validation_failed', 'invalid query', { fields });
        const principal = principalOf(ctx);
        assertTenant(principal, tenantId);
        const query: { -readonly [K in keyof RecordQuery]: RecordQuery[K] } = { tenantId, limit };
        for (const name of ['database', 'collection', 'recordId', 'snapshotId', 'cursor'] as const) {
          const v = q.get(name);
          if (v !== null && v !== '') query[name] = v;
        }
        if (fromMs !== undefined) query.fromMs = fromMs;
        if (toMs !== undefined) query.toMs = toMs;
        const [page, gate] = await Promise.all([deps.index.queryRecords(query), deps.evidence.gate(principal, tenantId)]);
        const withheld: RecordSummary[] = [];
        const items = page.items.map((item) => {
          if (gate(item).allowed) return item;
          withheld.push(item);
          return withhold(item, SUMMARY_EVIDENCE);
        });
        await deps.evidence.reportWithheld({ principal, correlationId: ctx.correlationId }, tenantId, 'records', withheld, 'policy');
        return { status: 200, body: { items, nextCursor: page.nextCursor } };
      },
    }),
    {
      method: 'GET',
      pattern: '/api/Admin/health',
      operationId: 'GetHealth',
      auth: 'none',
      handle: async () => {
        const report = await deps.health.publicReport();
        return report.status === 'ok' ? { status: 200, body: report } : { status: 503, body: report, headers: HEALTH_RETRY_AFTER };
      },
    },
    { method: 'GET', pattern: '/swagger', operationId: 'SwaggerUi', auth: 'none', handle: () => Promise.resolve(deps.swagger.page()) },
    { method: 'GET', pattern: '/swagger/openapi.json', operationId: 'OpenApiDocument', auth: 'none', handle: () => Promise.resolve(deps.swagger.document()) },
    { method: 'GET', pattern: '/swagger/assets/:file', operationId: 'SwaggerAsset', auth: 'none', handle: (ctx) => Promise.resolve(deps.swagger.asset(ctx.params['file'] ?? '')) },
  ];
}

/**
 * Routes of the administration listener only (never the public one): key provisioning and the
 * detailed health report, guarded by the admin token.
 */
export function buildAdminRoutes(deps: AdminRouteDeps): Route[] {
  const admin = (r: Omit<Route, 'auth'>): Route => ({ ...r, auth: 'admin' });

  return [
    admin({
      method: 'GET',
      pattern: '/admin/v1/health',
      operationId: 'GetHealthDetail',
      handle: async () => {
        const report = await deps.health.report();
        return report.status === 'ok' ? { status: 200, body: report } : { status: 503, body: report, headers: HEALTH_RETRY_AFTER };
      },
    }),
    admin({
      method: 'POST',
      pattern: '/admin/v1/keys',
      operationId: 'CreateApiKey',
      maxBodyBytes: 64 * 1024,
      handle: async (ctx) => {
        const b = jsonBody(ctx);
        const fields: FieldError[] = [];
        const str = (name: string, required: boolean): string | undefined => {
          const v = b[name];
          if (v === undefined || v === null) {
            if (required) fields.push({ path: name, code: 'required', message: 'is required' });
            return undefined;
          }
          if (typeof v !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(v)) {
            fields.push({ path: name, code: 'invalid_format', message: 'must be an identifier' });
            return undefined;
          }
          return v;
        };
        const tenantId = str('tenantId', true);
        const clientId = str('clientId', true);
        const level = (b['level'] ?? 'standard') as AccessLevel;
        if (!ACCESS_LEVELS.includes(level)) fields.push({ path: 'level', code: 'invalid_enum', message: `must be one of ${ACCESS_LEVELS.join(', ')}` });
        let expiresAtMs: number | null = null;
        if (b['expiresAt'] !== undefined && b['expiresAt'] !== null) {
          const ms = typeof b['expiresAt'] === 'string' ? Date.parse(b['expiresAt']) : NaN;
          if (!Number.isFinite(ms)) fields.push({ path: 'expiresAt', code: 'invalid_format', message: 'must be an ISO 8601 date-time' });
          else expiresAtMs = ms;
        }
        const also = b['alsoTenants'] ?? [];
        if (!Array.isArray(also) || !also.every((t) => typeof t === 'string' && /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(t))) {
          fields.push({ path: 'alsoTenants', code: 'invalid_type', message: 'must be a list of tenant identifiers' });
        }
        if (fields.length > 0 || tenantId === undefined || clientId === undefined) throw new DrisError('validation_failed', 'invalid key request', { fields });
        const created = await deps.keys.create({ tenantId, clientId, level, expiresAtMs, alsoTenants: also as string[] }, ctx.correlationId);
        return { status: 201, body: created };
      },
    }),
    admin({
      method: 'GET',
      pattern: '/admin/v1/keys',
      operationId: 'ListApiKeys',
      handle: async (ctx) => ({ status: 200, body: { items: await deps.keys.list(ctx.query.get('tenantId') ?? undefined) } }),
    }),
    admin({
      method: 'POST',
      pattern: '/admin/v1/keys/:keyId/revoke',
      operationId: 'RevokeApiKey',
      maxBodyBytes: 1024,
      handle: async (ctx) => {
        const keyId = ctx.params['keyId'] ?? '';
        const key = await deps.keys.revoke(keyId, ctx.correlationId);
        deps.onKeyChanged(keyId);
        return { status: 200, body: key };
      },
    }),
    admin({
      method: 'POST',
      pattern: '/admin/v1/keys/:keyId/rotate',
      operationId: 'RotateApiKey',
      maxBodyBytes: 1024,
      handle: async (ctx) => {
        const keyId = ctx.params['keyId'] ?? '';
        const b = jsonBody(ctx);
        const grace = b['graceSeconds'] ?? 0;
        if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > 30 * 86_400) {
          throw new DrisError('validation_failed', 'invalid rotation', { fields: [{ path: 'graceSeconds', code: 'out_of_range', message: 'must be an integer from 0 to 2592000' }] });
        }
        const created = await deps.keys.rotate(keyId, grace * 1000, ctx.correlationId);
        deps.onKeyChanged(keyId);
        return { status: 201, body: created };
      },
    }),
  ];
}

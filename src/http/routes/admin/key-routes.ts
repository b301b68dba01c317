import typia from 'typia';
import type { ApiKeyList, ApiKeyView, CreatedApiKey } from '../../../app/views.js';
import type { CreateApiKeyRequest, RotateApiKeyRequest } from '../../../app/keys/key-requests.js';
import { bodyOf, pathParam } from '../../params.js';
import { readQuery, text } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { admin } from '../bind.js';
import { EMPTY_BODY, noMembers } from '../empty-body.js';

/** Key provisioning on the administration listener: create (shown once), list, revoke, rotate. */

const validateCreate = typia.createValidate<CreateApiKeyRequest>();
const validateRotate = typia.createValidate<RotateApiKeyRequest>();
const KEY_ID = { keyId: 'Key identifier (the part of the key before the dot).' };
const keyView = typia.json.schema<ApiKeyView, '3.1'>();
const created = typia.json.schema<CreatedApiKey, '3.1'>();
const common = { listener: 'admin', auth: 'admin' } as const;

export const CreateApiKey = route('POST /admin/v1/keys', 'CreateApiKey', 'Admin', 'Create an API key (operators); the secret is in this answer only', {
  ...common,
  body: { schema: typia.json.schema<CreateApiKeyRequest, '3.1'>(), required: true, limit: { bytes: 64 * 1024 }, example: { tenantId: 'acme', clientId: 'billing', level: 'standard' } },
  responses: { 201: json('The key, with its secret (apiKey) shown once.', created) },
  bind: admin((s) => async (ctx) => {
    const b = bodyOf(ctx, validateCreate);
    const input = { tenantId: b.tenantId, clientId: b.clientId, level: b.level ?? 'standard', expiresAtMs: b.expiresAt === undefined || b.expiresAt === null ? null : Date.parse(b.expiresAt), alsoTenants: b.alsoTenants ?? [] };
    return reply<CreatedApiKey>(201, await s.keys.create(input, ctx.correlationId));
  }),
});

const listQuery = { tenantId: text('Only the keys of this tenant.') };

export const ListApiKeys = route('GET /admin/v1/keys', 'ListApiKeys', 'Admin', 'List API keys, newest first (operators); never their secrets', {
  ...common,
  query: listQuery,
  responses: { 200: json('The keys.', typia.json.schema<ApiKeyList, '3.1'>()) },
  bind: admin((s) => async (ctx) => reply<ApiKeyList>(200, { items: await s.keys.list(readQuery(ctx.query, listQuery).tenantId) })),
});

export const RevokeApiKey = route('POST /admin/v1/keys/:keyId/revoke', 'RevokeApiKey', 'Admin', 'Revoke an API key at once (operators)', {
  ...common,
  description: 'Takes no body; an empty JSON object is accepted too. Revoking a revoked key answers it unchanged.',
  pathParams: KEY_ID,
  body: EMPTY_BODY,
  responses: { 200: json('The revoked key.', keyView), 404: error('Unknown key.') },
  bind: admin((s) => async (ctx) => {
    noMembers(ctx);
    return reply<ApiKeyView>(200, await s.keys.revoke(pathParam(ctx, 'keyId'), ctx.correlationId));
  }),
});

export const RotateApiKey = route('POST /admin/v1/keys/:keyId/rotate', 'RotateApiKey', 'Admin', 'Replace an API key by a new one for the same client (operators)', {
  ...common,
  description: 'The old key keeps working for graceSeconds (0, the default, revokes it at once). No body is the same as `{}`.',
  pathParams: KEY_ID,
  body: { schema: typia.json.schema<RotateApiKeyRequest, '3.1'>(), required: false, limit: { bytes: 1024 }, example: { graceSeconds: 3600 } },
  responses: { 201: json('The new key, with its secret shown once.', created), 404: error('Unknown key.'), 409: error('The key is revoked (invalid_state).') },
  bind: admin((s) => async (ctx) => {
    const b = bodyOf(ctx, validateRotate);
    return reply<CreatedApiKey>(201, await s.keys.rotate(pathParam(ctx, 'keyId'), (b.graceSeconds ?? 0) * 1000, ctx.correlationId));
  }),
});

import type { tags } from 'typia';
import type { AccessLevel } from '../../domain/keys/types.js';
import type { ClientId, TenantId } from '../../domain/records/types.js';

/** POST /admin/v1/keys: a key for one client of one tenant (SPEC, Authentication). */
export interface CreateApiKeyRequest {
  tenantId: TenantId;
  clientId: ClientId;
  /** Default `standard`. */
  level?: AccessLevel | null;
  /** When the key stops working; none by default. */
  expiresAt?: (string & tags.Format<'date-time'>) | null;
  /** Further tenants the key may act for. */
  alsoTenants?: (TenantId[] & tags.MaxItems<1000>) | null;
}

export const MAX_GRACE_SECONDS = 30 * 86_400;

/** POST /admin/v1/keys/{keyId}/rotate: how long the old key keeps working. No body: 0. */
export interface RotateApiKeyRequest {
  graceSeconds?: (number & tags.Type<'uint32'> & tags.Maximum<2592000>) | null;
}

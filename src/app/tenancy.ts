import { assertTenant, type Principal } from './authenticator.js';

/**
 * Whom a request is for. Reads are scoped to the key's tenants: a tenant the key may not act for
 * is refused (forbidden_tenant); another tenant's snapshot or record is simply not found, exactly
 * as an unknown one.
 */

export interface Caller {
  readonly principal: Principal;
  readonly correlationId: string;
}

/** The one tenant a request acts for: the one named (checked), else the key's own. */
export function actingTenant(principal: Principal, named: string | undefined): string {
  const tenantId = named ?? principal.tenantId;
  assertTenant(principal, tenantId);
  return tenantId;
}

/** The tenants a read may look in: the one named (checked), or all of the key's, its own first. */
export function readableTenants(principal: Principal, named: string | undefined): string[] {
  if (named !== undefined) {
    assertTenant(principal, named);
    return [named];
  }
  return [principal.tenantId, ...[...principal.tenants].filter((t) => t !== principal.tenantId)];
}

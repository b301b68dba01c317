import type { AdminServices, ApiServices } from '../../app/api-services.js';
import type { Handler, RouteSpec } from '../route-spec.js';

/** A public route's handler over the API services; not served where there are none. */
export function api(make: (s: ApiServices) => Handler): RouteSpec['bind'] {
  return (services) => (services.api === undefined ? null : make(services.api));
}

/** An administration route's handler over the admin services. */
export function admin(make: (s: AdminServices) => Handler): RouteSpec['bind'] {
  return (services) => (services.admin === undefined ? null : make(services.admin));
}

export const SNAPSHOT_ID = { snapshotId: 'Snapshot identifier (s_…).' } as const;
export const TENANT_NOTE = "Tenant to look in; all of the key's tenants when absent. A tenant the key may not act for answers 403.";

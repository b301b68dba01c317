/** The common query of a tenant's listing; every member but limit only when given. */
export interface Listing {
  /** The key's own tenant when absent (checked by actingTenant). */
  readonly tenantId?: string | undefined;
  /** Earliest time, inclusive, epoch milliseconds. */
  readonly fromMs?: number | undefined;
  /** Latest time, exclusive, epoch milliseconds. */
  readonly toMs?: number | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

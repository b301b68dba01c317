import { DrisError } from '../errors/dris-error.js';
import { parseKey, secretMatches } from '../domain/keys/api-key.js';
import type { AccessLevel, ApiKeyRecord, KeyStore } from '../domain/keys/types.js';

/** Who is calling: resolved from X-API-Key once per request. */
export interface Principal {
  readonly keyId: string;
  readonly tenantId: string;
  readonly clientId: string;
  readonly level: AccessLevel;
  /** The key's own tenant and the further tenants it may act for. */
  readonly tenants: ReadonlySet<string>;
}

interface CacheEntry {
  readonly key: ApiKeyRecord | null;
  readonly fetchedAtMs: number;
}

export interface AuthenticatorOptions {
  /** How long a looked-up key is trusted before the store is asked again, milliseconds. */
  readonly refreshMs: number;
  /** Upper bound on cached entries, so random key ids cannot grow memory without end. */
  readonly maxEntries?: number;
  readonly now?: () => number;
}

/**
 * Resolves API keys against the shared key store with a short-lived cache, so every API process
 * of a cluster sees a revocation within refreshMs without a store round trip per request.
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  /**
   * Full key text → principal, for keys whose secret was checked against the current record.
   * A Map lookup by the whole text reveals nothing byte by byte, so it may stand in for the hash
   * comparison; the record's revocation and expiry are still checked on every request.
   */
  private readonly verified = new Map<string, { readonly key: ApiKeyRecord; readonly principal: Principal }>();
  private readonly inflight = new Map<string, Promise<ApiKeyRecord | null>>();
  private readonly now: () => number;
  private readonly maxEntries: number;

  constructor(
    private readonly store: KeyStore,
    private readonly options: AuthenticatorOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.maxEntries = options.maxEntries ?? 100_000;
  }

  /** Forgets a key so the next request reads the store (after a revocation in this process). */
  invalidate(keyId: string): void {
    this.cache.delete(keyId);
    for (const [text, v] of this.verified) if (v.key.keyId === keyId) this.verified.delete(text);
  }

  private async lookup(keyId: string): Promise<ApiKeyRecord | null> {
    const cached = this.cache.get(keyId);
    const now = this.now();
    if (cached !== undefined && now - cached.fetchedAtMs < this.options.refreshMs) return cached.key;
    let pending = this.inflight.get(keyId);
    if (pending === undefined) {
      pending = this.store.getKey(keyId).finally(() => this.inflight.delete(keyId));
      this.inflight.set(keyId, pending);
    }
    const key = await pending;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(keyId, { key, fetchedAtMs: now });
    return key;
  }

  /**
   * The principal of a key already checked against the record cached now, still fresh, not
   * revoked and not expired: what authenticate() would answer, without waiting. undefined
   * whenever authenticate() has more to do (a look-up, a secret check, an error to raise).
   */
  authenticateNow(apiKey: string | undefined): Principal | undefined {
    if (apiKey === undefined) return undefined;
    const known = this.verified.get(apiKey);
    if (known === undefined) return undefined;
    const cached = this.cache.get(known.key.keyId);
    const now = this.now();
    if (cached === undefined || cached.key !== known.key || now - cached.fetchedAtMs >= this.options.refreshMs) return undefined;
    const key = known.key;
    if ((key.revokedAtMs !== null && key.revokedAtMs <= now) || (key.expiresAtMs !== null && key.expiresAtMs <= now)) return undefined;
    return known.principal;
  }

  async authenticate(apiKey: string | undefined): Promise<Principal> {
    if (apiKey === undefined || apiKey === '') throw new DrisError('missing_api_key', 'the X-API-Key header is required');
    const parsed = parseKey(apiKey);
    if (parsed === null) throw new DrisError('invalid_api_key', 'the API key is malformed');
    const key = await this.lookup(parsed.keyId);
    const known = this.verified.get(apiKey);
    // Trusted only while the store still answers with the very record the secret was checked on.
    const principal = known !== undefined && known.key === key ? known.principal : undefined;
    if (principal === undefined && (key === null || !secretMatches(parsed.secret, key.secretHash))) throw new DrisError('invalid_api_key', 'the API key is not valid');
    if (key === null) throw new DrisError('invalid_api_key', 'the API key is not valid');
    if (key.revokedAtMs !== null && key.revokedAtMs <= this.now()) throw new DrisError('revoked_api_key', 'the API key has been revoked');
    if (key.expiresAtMs !== null && key.expiresAtMs <= this.now()) throw new DrisError('expired_api_key', 'the API key has expired');
    if (principal !== undefined) return principal;
    const fresh: Principal = {
      keyId: key.keyId,
      tenantId: key.tenantId,
      clientId: key.clientId,
      level: key.level,
      tenants: new Set([key.tenantId, ...key.alsoTenants]),
    };
    if (this.verified.size >= this.maxEntries) this.verified.clear();
    this.verified.set(apiKey, { key, principal: fresh });
    return fresh;
  }
}

/** Throws 403 unless the principal may act for `tenantId`. */
export function assertTenant(principal: Principal, tenantId: string): void {
  if (!principal.tenants.has(tenantId)) throw new DrisError('forbidden_tenant', 'the API key may not act for this tenant');
}

/** API keys: one key belongs to one client of one tenant (SPEC, Authentication; DECISIONS). */

export type AccessLevel = 'standard' | 'premium' | 'enterprise';
export const ACCESS_LEVELS: readonly AccessLevel[] = ['standard', 'premium', 'enterprise'];

/** What is stored of a key: never the secret, only its SHA-256. */
export interface ApiKeyRecord {
  readonly keyId: string;
  readonly tenantId: string;
  readonly clientId: string;
  readonly level: AccessLevel;
  /** SHA-256 of the secret part, lowercase hex. */
  readonly secretHash: string;
  /** Epoch milliseconds. */
  readonly createdAtMs: number;
  readonly expiresAtMs: number | null;
  readonly revokedAtMs: number | null;
  /** Further tenants this key may act for. */
  readonly alsoTenants: readonly string[];
  /** keyId of the key this one replaced, when made by rotation. */
  readonly rotatedFrom: string | null;
}

/** Durable, shared store of keys (every API process reads it). */
export interface KeyStore {
  /** Inserts or replaces the key with this keyId. */
  putKey(key: ApiKeyRecord): Promise<void>;
  getKey(keyId: string): Promise<ApiKeyRecord | null>;
  /** All keys, or those of one tenant; newest first. */
  listKeys(tenantId?: string): Promise<ApiKeyRecord[]>;
  countKeys(): Promise<number>;
}

import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { DrisError } from '../errors/dris-error.js';
import { generateKey } from '../domain/keys/api-key.js';
import type { AccessLevel, ApiKeyRecord, KeyStore } from '../domain/keys/types.js';
import type { AuditLog } from '../domain/audit/ports.js';

export interface CreateKeyInput {
  readonly tenantId: string;
  readonly clientId: string;
  readonly level: AccessLevel;
  readonly expiresAtMs: number | null;
  readonly alsoTenants: readonly string[];
}

/** A key as listed: everything but the secret hash. */
export type KeyView = Omit<ApiKeyRecord, 'secretHash'>;

export interface CreatedKey {
  readonly apiKey: string;
  readonly key: KeyView;
}

function view(k: ApiKeyRecord): KeyView {
  const { secretHash: _omit, ...rest } = k;
  return rest;
}

/** Provisioning of API keys: create (shown once), list, revoke, rotate; each one audited. */
export class KeyAdmin {
  constructor(
    private readonly store: KeyStore,
    private readonly audit: AuditLog | null,
    private readonly now: () => number = Date.now,
  ) {}

  private async record(action: string, key: ApiKeyRecord, outcome: string, correlationId: string): Promise<void> {
    if (this.audit === null) return;
    await this.audit.append([
      {
        eventId: randomBytes(12).toString('hex'),
        atMs: this.now(),
        tenantId: key.tenantId,
        clientId: 'operator',
        keyId: 'admin',
        action,
        resource: `key:${key.keyId}`,
        outcome,
        correlationId,
        detail: { clientId: key.clientId, level: key.level },
      },
    ]);
  }

  async create(input: CreateKeyInput, correlationId: string, rotatedFrom: string | null = null): Promise<CreatedKey> {
    const g = generateKey();
    const rec: ApiKeyRecord = {
      keyId: g.keyId,
      tenantId: input.tenantId,
      clientId: input.clientId,
      level: input.level,
      secretHash: g.secretHash,
      createdAtMs: this.now(),
      expiresAtMs: input.expiresAtMs,
      revokedAtMs: null,
      alsoTenants: [...new Set(input.alsoTenants.filter((t) => t !== input.tenantId))],
      rotatedFrom,
    };
    await this.store.putKey(rec);
    await this.record(rotatedFrom === null ? 'key.create' : 'key.rotate', rec, 'success', correlationId);
    return { apiKey: g.apiKey, key: view(rec) };
  }

  async list(tenantId?: string): Promise<KeyView[]> {
    return (await this.store.listKeys(tenantId)).map(view);
  }

  async revoke(keyId: string, correlationId: string): Promise<KeyView> {
    const key = await this.store.getKey(keyId);
    if (key === null) throw new DrisError('not_found', 'no such key');
    if (key.revokedAtMs !== null) return view(key);
    const revoked: ApiKeyRecord = { ...key, revokedAtMs: this.now() };
    await this.store.putKey(revoked);
    await this.record('key.revoke', revoked, 'success', correlationId);
    return view(revoked);
  }

  /**
   * Issues a new key for the same client and settings; the old key stays valid for graceMs so
   * callers can be updated, then is revoked (at once when graceMs is 0).
   */
  async rotate(keyId: string, graceMs: number, correlationId: string): Promise<CreatedKey> {
    const old = await this.store.getKey(keyId);
    if (old === null) throw new DrisError('not_found', 'no such key');
    if (old.revokedAtMs !== null && old.revokedAtMs <= this.now()) throw new DrisError('invalid_state', 'a revoked key cannot be rotated');
    const created = await this.create(
      { tenantId: old.tenantId, clientId: old.clientId, level: old.level, expiresAtMs: old.expiresAtMs, alsoTenants: old.alsoTenants },
      correlationId,
      old.keyId,
    );
    await this.store.putKey({ ...old, revokedAtMs: this.now() + Math.max(0, graceMs) });
    return created;
  }

  /**
   * First start with no keys at all: one standard key for tenant `default`, client `default`,
   * written to a 0600 file; the caller logs the path, never the key.
   */
  async bootstrap(dataDir: string): Promise<string | null> {
    if ((await this.store.countKeys()) > 0) return null;
    const created = await this.create({ tenantId: 'default', clientId: 'default', level: 'standard', expiresAtMs: null, alsoTenants: [] }, 'bootstrap');
    mkdirSync(dataDir, { recursive: true });
    const file = path.join(dataDir, 'bootstrap-credentials.json');
    writeFileSync(file, JSON.stringify({ tenantId: 'default', clientId: 'default', keyId: created.key.keyId, level: 'standard', apiKey: created.apiKey }, null, 2) + '\n', {
      mode: 0o600,
    });
    chmodSync(file, 0o600);
    return file;
  }
}

/**
 * The token that guards the administration listener: DRIS_ADMIN_TOKEN (its length is checked with
 * the configuration), else <dataDir>/admin-token, made once with 32 random bytes (256 bits) and
 * mode 0600. A token file shorter than minBytes stops start-up: a short token is guessable
 * whatever the throttling.
 */
export function resolveAdminToken(dataDir: string, configured: string | undefined, minBytes: number): { token: string; file: string | null } {
  if (configured !== undefined) {
    if (Buffer.byteLength(configured, 'utf8') < minBytes) throw new DrisError('config_invalid', `DRIS_ADMIN_TOKEN must be at least ${minBytes} bytes`);
    return { token: configured, file: null };
  }
  const file = path.join(dataDir, 'admin-token');
  if (existsSync(file)) {
    const token = readFileSync(file, 'utf8').trim();
    if (Buffer.byteLength(token, 'utf8') < minBytes) {
      throw new DrisError('config_invalid', `the admin token in ${file} is shorter than ${minBytes} bytes; replace it (e.g. openssl rand -base64 32 > ${file}) or delete it to have one generated`);
    }
    return { token, file };
  }
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(ADMIN_TOKEN_RANDOM_BYTES).toString('base64url');
  writeFileSync(file, token + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { token, file };
}

/** Random bytes of a generated admin token (43 base64url characters). */
export const ADMIN_TOKEN_RANDOM_BYTES = 32;

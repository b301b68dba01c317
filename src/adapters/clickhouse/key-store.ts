import { ACCESS_LEVELS, type AccessLevel, type ApiKeyRecord, type KeyStore } from '../../domain/keys/types.js';
import { DrisError } from '../../errors/dris-error.js';
import type { ClickHouseDatabase } from './database.js';
import { dateTime64Text, nn, ReplacementClock, type Int64Out } from './values.js';

/**
 * API keys in the api_keys table: a key is replaced whole (revocation, rotation) with a strictly
 * increasing version, and read with FINAL.
 */

interface ApiKeyRow {
  key_id: string;
  tenant_id: string;
  client_id: string;
  level: string;
  secret_hash: string;
  created_at_ms: Int64Out;
  expires_at_ms: Int64Out | null;
  revoked_at_ms: Int64Out | null;
  also_tenants: string[];
  rotated_from: string | null;
}

const API_KEY_COLUMNS = `key_id, tenant_id, client_id, level, secret_hash,
       toUnixTimestamp64Milli(created_at) AS created_at_ms,
       toUnixTimestamp64Milli(expires_at) AS expires_at_ms,
       toUnixTimestamp64Milli(revoked_at) AS revoked_at_ms,
       also_tenants, rotated_from`;

export class ClickHouseKeyStore implements KeyStore {
  readonly #db: ClickHouseDatabase;
  readonly #versions = new ReplacementClock();

  constructor(db: ClickHouseDatabase) {
    this.#db = db;
  }

  async putKey(key: ApiKeyRecord): Promise<void> {
    const row = {
      key_id: key.keyId,
      tenant_id: key.tenantId,
      client_id: key.clientId,
      level: key.level,
      secret_hash: key.secretHash,
      created_at: dateTime64Text(key.createdAtMs),
      expires_at: key.expiresAtMs === null ? null : dateTime64Text(key.expiresAtMs),
      revoked_at: key.revokedAtMs === null ? null : dateTime64Text(key.revokedAtMs),
      also_tenants: [...key.alsoTenants],
      rotated_from: key.rotatedFrom,
      updated_at: this.#versions.next().text,
    };
    await this.#db.runner.insertJsonEachRow(this.#db.table('api_keys'), [row]);
  }

  async getKey(keyId: string): Promise<ApiKeyRecord | null> {
    const rows = await this.#db.runner.query<ApiKeyRow>(
      `SELECT ${API_KEY_COLUMNS}
FROM ${this.#db.table('api_keys')} FINAL
WHERE key_id = {keyId:String}`,
      { keyId },
    );
    const row = rows[0];
    return row === undefined ? null : toApiKey(row);
  }

  async listKeys(tenantId?: string): Promise<ApiKeyRecord[]> {
    const sql = `SELECT ${API_KEY_COLUMNS}
FROM ${this.#db.table('api_keys')} FINAL
${tenantId === undefined ? '' : 'WHERE tenant_id = {tenantId:String}\n'}ORDER BY created_at DESC, key_id DESC`;
    const rows = tenantId === undefined ? await this.#db.runner.query<ApiKeyRow>(sql) : await this.#db.runner.query<ApiKeyRow>(sql, { tenantId });
    return rows.map(toApiKey);
  }

  async countKeys(): Promise<number> {
    const rows = await this.#db.runner.query<{ n: Int64Out }>(`SELECT count() AS n FROM ${this.#db.table('api_keys')} FINAL`);
    return Number(rows[0]?.n ?? 0);
  }
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  if (!(ACCESS_LEVELS as readonly string[]).includes(row.level)) {
    throw new DrisError('internal_error', 'stored key has an unknown access level');
  }
  // A line each: who the key is, its life (created, expires, revoked), its relations.
  return {
    keyId: row.key_id, tenantId: row.tenant_id, clientId: row.client_id, level: row.level as AccessLevel, secretHash: row.secret_hash,
    createdAtMs: Number(row.created_at_ms), expiresAtMs: nn(row.expires_at_ms), revokedAtMs: nn(row.revoked_at_ms),
    alsoTenants: row.also_tenants, rotatedFrom: row.rotated_from,
  };
}

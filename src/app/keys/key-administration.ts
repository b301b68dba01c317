import type { CreatedKey, CreateKeyInput, KeyAdmin, KeyView } from '../key-admin.js';

/**
 * Key administration as the administration listener offers it: KeyAdmin's provisioning, and a
 * key revoked or rotated here stops being accepted by this process at once (its cached
 * authentication is dropped), by the others of a cluster within their refresh interval.
 */
export class KeyAdministration {
  constructor(
    private readonly keys: KeyAdmin,
    private readonly onKeyChanged: (keyId: string) => void,
  ) {}

  create(input: CreateKeyInput, correlationId: string): Promise<CreatedKey> {
    return this.keys.create(input, correlationId);
  }

  list(tenantId: string | undefined): Promise<KeyView[]> {
    return this.keys.list(tenantId);
  }

  async revoke(keyId: string, correlationId: string): Promise<KeyView> {
    const key = await this.keys.revoke(keyId, correlationId);
    this.onKeyChanged(keyId);
    return key;
  }

  async rotate(keyId: string, graceMs: number, correlationId: string): Promise<CreatedKey> {
    const created = await this.keys.rotate(keyId, graceMs, correlationId);
    this.onKeyChanged(keyId);
    return created;
  }
}

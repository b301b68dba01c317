import path from 'node:path';
import type { Config } from '../config/config.js';
import type { AdmissionStore } from '../domain/limits/ports.js';
import { definedOnly } from '../util/defined.js';
import type { Logger } from '../util/logger.js';

/** Rate limits and idempotency keys: Redis when REDIS_URL is set, else the embedded store. */
export async function openAdmission(cfg: Config, root: Logger): Promise<{ store: AdmissionStore; adapter: string }> {
  if (cfg.redis !== undefined) {
    const { RedisAdmissionStore } = await import('../adapters/limits/redis-admission-store.js');
    const r = cfg.redis;
    const store = await RedisAdmissionStore.connect({
      url: r.url,
      keyPrefix: r.keyPrefix,
      logger: root.child({ component: 'redis-admission-store' }),
      ...definedOnly({ password: r.password }),
    });
    return { store, adapter: 'redis' };
  }
  const { EmbeddedAdmissionStore } = await import('../adapters/limits/embedded-admission-store.js');
  const store = await EmbeddedAdmissionStore.open({ dir: path.join(cfg.dataDir, 'admission'), logger: root.child({ component: 'embedded-admission' }) });
  return { store, adapter: 'embedded' };
}

import { sanitizeUrl } from '../util/redact.js';
import type { Config } from './types.js';

/**
 * What the start-up log may show of the configuration: endpoints through the URL sanitiser (no
 * userinfo, no keys in paths or queries), no tokens, passwords or keys at all.
 */
export function describeConfig(cfg: Config): Record<string, unknown> {
  const url = (u: string | undefined): string => (u === undefined ? '' : sanitizeUrl(u));
  return {
    port: cfg.port,
    host: cfg.host,
    adminHost: cfg.adminHost,
    adminPort: cfg.adminPort,
    ops: cfg.ops,
    adminTokenSource: cfg.adminToken === undefined ? 'file' : 'environment',
    dataDir: cfg.dataDir,
    roles: cfg.roles,
    batchMaxRecords: cfg.batchMaxRecords,
    batchMaxWaitMs: cfg.batchMaxWaitMs,
    hashBackend: cfg.hashBackend,
    rateLimits: cfg.rateLimits,
    queue: cfg.nats === undefined ? 'embedded' : `nats ${cfg.nats.url.split(',').map(url).join(',')}`,
    admission: cfg.redis === undefined ? 'embedded' : `redis ${url(cfg.redis.url)}`,
    index: cfg.clickhouse === undefined ? 'embedded (chdb)' : `clickhouse ${url(cfg.clickhouse.url)}`,
    chain: cfg.chain.rpcUrl === undefined ? 'embedded (anvil)' : url(cfg.chain.rpcUrl),
    ...(cfg.chain.publicRpcUrl === undefined ? {} : { publicRpcUrl: url(cfg.chain.publicRpcUrl) }),
    ipfs: cfg.ipfsApiUrl === undefined ? 'embedded' : `kubo ${url(cfg.ipfsApiUrl)}`,
    ...(cfg.ipfsGatewayUrl === undefined ? {} : { ipfsGatewayUrl: url(cfg.ipfsGatewayUrl) }),
    anchorRetry: cfg.anchorRetry,
    queueMaxBytes: cfg.queueMaxBytes,
    minFreeBytes: cfg.minFreeBytes,
  };
}

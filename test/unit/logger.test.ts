import { Writable } from 'node:stream';
import t from 'tap';
import { describeConfig, loadConfig } from '../../src/config/config.js';
import { createLogger, fixedFieldsChild } from '../../src/util/logger.js';

/** A logger of the service's configuration writing into an array of parsed lines. */
function capture(): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      cb();
    },
  });
  return { lines, log: createLogger('info', sink) };
}

const INFURA_KEY = '9aa3d95b3bc440fa88ea12eaa4456161';
const PRIVATE_KEY = '0x' + 'ab'.repeat(32);
const SECRETS = [INFURA_KEY, 'natspw', 'redispw', 'chuser:chpw', 'kubopw', 'adm1n-t0ken-0123456789-0123456789-xyz', PRIVATE_KEY.slice(2), 'gatewaytok'];

t.test('the start-up configuration line carries no credential', async (t) => {
  const cfg = loadConfig({
    NATS_URL: 'nats://dris:natspw@nats:4222',
    NATS_PASSWORD: 'natspw',
    REDIS_URL: 'redis://:redispw@redis:6379/0',
    CLICKHOUSE_URL: 'https://chuser:chpw@ch.example.org:8443',
    EVM_RPC_URL: `https://mainnet.infura.io/v3/${INFURA_KEY}`,
    DRIS_ANCHORER_KEY: PRIVATE_KEY,
    IPFS_API_URL: 'http://admin:kubopw@kubo:5001',
    DRIS_IPFS_GATEWAY_URL: 'https://gw.example.org/ipfs?token=gatewaytok',
    DRIS_ADMIN_TOKEN: 'adm1n-t0ken-0123456789-0123456789-xyz',
  });
  const { lines, log } = capture();
  log.info({ config: describeConfig(cfg) }, 'starting');
  t.equal(lines.length, 1);
  const line = lines[0] ?? '';
  for (const s of SECRETS) t.notOk(line.includes(s), `no ${s}`);
  t.match(line, /mainnet\.infura\.io\/v3\/\*\*\*/, 'the endpoint is still named');
  t.match(line, /"adminTokenSource":"environment"/);
});

t.test('credentials passed to a logger are censored anyway', async (t) => {
  const { lines, log } = capture();
  log.info({ headers: { authorization: 'Bearer adm1n-t0ken-0123456789-0123456789-xyz', 'x-api-key': 'dris_abc' } }, 'request');
  log.info({ privateKey: PRIVATE_KEY, nested: { password: 'natspw', deeper: { token: 'gatewaytok' } } }, 'keys');
  log.warn({ url: 'http://admin:kubopw@kubo:5001/api/v0', rpcUrl: `https://mainnet.infura.io/v3/${INFURA_KEY}`, server: 'nats://dris:natspw@nats:4222' }, 'endpoints');
  const err = new Error(`request to https://mainnet.infura.io/v3/${INFURA_KEY} failed`, { cause: new Error('redis://:redispw@redis:6379 refused') });
  log.error({ err }, 'failed');
  log.error({ error: { message: 'auth failed password=natspw' } }, 'failed again');
  t.equal(lines.length, 5);
  const all = lines.join('\n');
  for (const s of [...SECRETS, 'dris_abc']) t.notOk(all.includes(s), `no ${s}`);
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(parsed[2], { url: 'http://***:***@kubo:5001/api/v0', rpcUrl: 'https://mainnet.infura.io/v3/***', server: 'nats://***:***@nats:4222' });
  t.match(parsed[3], { err: { type: 'Error', message: /^request to https:\/\/mainnet\.infura\.io\/v3\/\*\*\* failed/ } });
  t.match(parsed[3]?.['err'], { stack: /Error: request to/ }, 'the stack is kept, sanitised');
});

t.test('a fixed-fields child writes the access log line as a redacting child does', async (t) => {
  const redacting = capture();
  const fixed = capture();
  const fields = { route: 'ingestRecord', method: 'POST', status: 202, durationMs: 1.2, correlationId: 'c-1', code: 'invalid_json' };
  redacting.log.child({ component: 'access' }).info(fields, 'request');
  fixedFieldsChild(fixed.log, { component: 'access' }).info(fields, 'request');
  const strip = (line: string | undefined): Record<string, unknown> => {
    const { time: _time, ...rest } = JSON.parse(line ?? '{}') as Record<string, unknown>;
    return rest;
  };
  t.same(strip(fixed.lines[0]), strip(redacting.lines[0]));
  t.equal(strip(fixed.lines[0])['correlationId'], 'c-1');
});

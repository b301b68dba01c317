import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { Test } from 'tap';
import { adminRequest, cliPath, createKey, eventually, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * The black-box ingest suite: the started service, HTTP only. It runs once per deployment mode
 * (embedded, NATS + Redis, ClickHouse server, the local fleet behind its load balancer);
 * `mode.env` supplies the adapters' URLs, `mode.start` a target other than one `dris serve`.
 */

/** What the suite talks to: one service, or a fleet's load balancer and an api process's administration listener. */
export interface Target {
  readonly url: string;
  readonly adminUrl: string;
  readonly adminPort: number;
  readonly adminToken: string;
  /** Environment of the (api) processes: which adapters they run. */
  readonly env: Readonly<Record<string, string>>;
  /** SIGKILLs the processes that hold acknowledged records, starts them again on the same data, and answers the target then. */
  crashAndRestart(): Promise<Target>;
  dispose(): Promise<void>;
  /**
   * A load balancer in front that may reset the connection of a request the service refused
   * before its body ended: HAProxy before 3.0 does not drain such a request (docs/operations.md,
   * local fleet). The refusal is then sent again until one reaches the client.
   */
  readonly resetsEarlyRefusals?: boolean;
}

export interface Mode {
  readonly name: string;
  /** Environment of the service: the adapters' URLs (empty for embedded). */
  env(): Promise<Record<string, string>>;
  /** Starts the target with the suite's environment added; one `dris serve` when absent. */
  start?(env: Record<string, string>): Promise<Target>;
}

/** One `dris serve`: a crash is its SIGKILL and a restart on the same data directory. */
async function serviceTarget(env: Record<string, string>, dataDir?: string): Promise<Target> {
  const svc: ServiceHandle = await startService({ env, ...(dataDir === undefined ? {} : { dataDir }) });
  return {
    url: svc.url,
    adminUrl: svc.adminUrl,
    adminPort: svc.adminPort,
    adminToken: svc.adminToken,
    env: svc.env,
    async crashAndRestart() {
      await svc.kill('SIGKILL');
      return serviceTarget(env, svc.dataDir);
    },
    dispose: () => svc.dispose(),
  };
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const HEX64 = /^[0-9a-f]{64}$/;

interface Ingested {
  recordId: string;
  recordHash: string;
  tenantId: string;
  acceptedAt: string;
  idempotencyReplayed: boolean;
  payloadHash: string;
  salt: string;
  ingestId: string;
}
interface ErrBody {
  error: string;
  message: string;
  details: string[];
  fieldErrors?: { path: string; code: string }[];
  retryAfter?: number;
  resetTime?: string;
  status?: number;
}
interface Page {
  items: Record<string, unknown>[];
  nextCursor: string | null;
}

const record = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  tenantId: 'acme',
  database: 'erp',
  collection: 'invoices',
  recordId: `inv-${Math.random().toString(36).slice(2)}`,
  recordPayload: { amount: 125.5, currency: 'EUR', lines: [{ sku: 'a', qty: 2 }] },
  ...over,
});

function codes(body: ErrBody): string[] {
  return (body.fieldErrors ?? []).map((f) => `${f.path}:${f.code}`);
}

async function countRecords(svc: { url: string }, key: string, query: string): Promise<Page> {
  const r = await request<Page>(svc, 'GET', `/api/v1/records?${query}`, { key });
  if (r.status !== 200) throw new Error(`query failed ${r.status} ${r.text}`);
  return r.body;
}

export function ingestSuite(t: Test, mode: Mode): void {
  let svc: Target;
  let key: string; // acme, standard level (generous limit in this suite)
  let otherKey: string; // globex
  let multiKey: string; // acme + globex
  let premiumKey: string; // acme, premium level (tight limit to reach 429)
  let env: Record<string, string>;

  t.before(async () => {
    env = {
      ...(await mode.env()),
      DRIS_RATE_LIMITS: 'standard=1000000,premium=25,enterprise=1000000',
    };
    svc = mode.start === undefined ? await serviceTarget(env) : await mode.start(env);
    key = (await createKey(svc, { tenantId: 'acme', clientId: 'billing' })).apiKey;
    otherKey = (await createKey(svc, { tenantId: 'globex', clientId: 'app' })).apiKey;
    multiKey = (await createKey(svc, { tenantId: 'acme', clientId: 'sync', alsoTenants: ['globex'] })).apiKey;
    premiumKey = (await createKey(svc, { tenantId: 'acme', clientId: 'burst', level: 'premium' })).apiKey;
  });
  t.teardown(async () => {
    await svc.dispose();
  });

  /**
   * A request refused before its body ended; sent again (at most 10 times, a little apart) where
   * the target may reset it: whether the client has written its whole body before the reset is a
   * race, which a loaded machine loses more often (five attempts in a row were lost once in CI).
   */
  async function refused<T>(send: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await send();
      } catch (err) {
        const reset = (err as { cause?: { code?: string } }).cause?.code === 'UND_ERR_SOCKET';
        if (!(svc.resetsEarlyRefusals === true && reset && attempt < 10)) throw err;
        await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      }
    }
  }

  t.test(`${mode.name}: health needs no key and reports component statuses only`, async (t) => {
    const r = await request<Record<string, unknown>>(svc, 'GET', '/api/Admin/health');
    t.equal(r.status, 200);
    t.equal(r.body['status'], 'ok');
    t.match(r.body['hashBackend'], { active: /^(native|wasm|js)$/ });
    t.notOk('unavailable' in (r.body['hashBackend'] as object), 'no loader errors in public');
    const deps = r.body['dependencies'] as Record<string, Record<string, unknown>>;
    for (const name of ['queue', 'index', 'admission']) t.same(deps[name], { status: 'ok' }, name);
    t.notOk('http' in r.body);
    t.notMatch(r.text, /:\/\//, 'no URL in the public answer');
    t.ok(r.headers.get('x-correlation-id'));
    // The detailed report is on the administration listener, with the admin token.
    const detail = await adminRequest<Record<string, unknown>>(svc, 'GET', '/admin/v1/health');
    t.equal(detail.status, 200);
    t.match(detail.body['http'], { engine: 'uWebSockets.js', native: true });
    const adapters = detail.body['dependencies'] as Record<string, { status: string; adapter: string; latencyMs: number }>;
    t.equal(adapters['queue']?.adapter, svc.env['NATS_URL'] === undefined ? 'embedded' : 'nats');
    t.equal(adapters['admission']?.adapter, svc.env['REDIS_URL'] === undefined ? 'embedded' : 'redis');
    t.equal((await request(svc, 'GET', '/admin/v1/health')).status, 404, 'not on the public listener');
    t.equal((await request({ url: svc.adminUrl }, 'GET', '/admin/v1/health')).status, 401, 'the detail needs the admin token');
  });

  t.test(`${mode.name}: a record is accepted with hashes anyone can recompute`, async (t) => {
    const rec = record({ sourceTimestamp: '2026-01-02T03:04:05Z', recordPayload: { z: 1, a: 'é', n: 1e21, m: [true, null, 0.5] } });
    const r = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, body: rec, headers: { 'x-correlation-id': 'corr-123' } });
    t.equal(r.status, 202);
    t.equal(r.headers.get('x-correlation-id'), 'corr-123');
    t.equal(r.body.recordId, rec['recordId']);
    t.equal(r.body.tenantId, 'acme');
    t.equal(r.body.idempotencyReplayed, false);
    t.match(r.body.recordHash, HEX64);
    t.match(r.body.salt, /^[0-9a-f]{32}$/);
    t.ok(Number.isFinite(Date.parse(r.body.acceptedAt)));
    // RFC 8785 by hand: keys sorted by code unit, 1e21 as "1e+21", no whitespace.
    const canonicalPayload = '{"a":"é","m":[true,null,0.5],"n":1e+21,"z":1}';
    t.equal(r.body.payloadHash, sha256(canonicalPayload));
    const envelope =
      `{"collection":"invoices","database":"erp","hashScheme":"dris-v1","operationType":"upsert","payloadHash":"${r.body.payloadHash}",` +
      `"recordId":"${String(rec['recordId'])}","recordVersion":"1","salt":"${r.body.salt}","sourceTimestamp":"2026-01-02T03:04:05Z","tenantId":"acme"}`;
    t.equal(r.body.recordHash, sha256(envelope));
    for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) t.match(r.headers.get(h), /^\d+$/, h);
    const page = await eventually(async () => {
      const p = await countRecords(svc, key, `tenantId=acme&recordId=${String(rec['recordId'])}`);
      return p.items.length === 1 ? p : undefined;
    });
    t.match(page.items[0], { recordVersion: '1', operationType: 'upsert', recordHash: r.body.recordHash, status: 'Ingested', clientId: 'billing' });
  });

  t.test(`${mode.name}: correlation id is generated when absent or unusable`, async (t) => {
    const a = await request(svc, 'GET', '/api/Admin/health');
    const b = await request(svc, 'GET', '/api/Admin/health', { headers: { 'x-correlation-id': 'bad value\twith tab' } });
    t.match(a.headers.get('x-correlation-id'), /^[0-9a-f-]{36}$/);
    t.match(b.headers.get('x-correlation-id'), /^[0-9a-f-]{36}$/);
  });

  t.test(`${mode.name}: authentication`, async (t) => {
    const body = record();
    const missing = await request<ErrBody>(svc, 'POST', '/api/v1/records', { body });
    t.equal(missing.status, 401);
    t.equal(missing.body.error, 'missing_api_key');
    t.same(missing.body.details, []);
    const malformed = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: 'not-a-key', body });
    t.equal(malformed.status, 401);
    t.equal(malformed.body.error, 'invalid_api_key');
    // Right format, wrong check digits.
    const tampered = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    t.equal((await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: tampered, body })).body.error, 'invalid_api_key');
    // A key of the right format that was never issued.
    const created = await createKey(svc, { tenantId: 'acme', clientId: 'temp' });
    const revoke = await adminRequest(svc, 'POST', `/admin/v1/keys/${created.key.keyId}/revoke`, { body: {} });
    t.equal(revoke.status, 200);
    const revoked = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: created.apiKey, body });
    t.equal(revoked.status, 401);
    t.equal(revoked.body.error, 'revoked_api_key');
    const expired = await createKey(svc, { tenantId: 'acme', clientId: 'old', expiresAt: '2020-01-01T00:00:00Z' });
    const ex = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: expired.apiKey, body });
    t.equal(ex.status, 401);
    t.equal(ex.body.error, 'expired_api_key');
    t.match(ex.headers.get('x-ratelimit-limit'), /^\d+$/);
    const admin = await request<ErrBody>({ url: svc.adminUrl }, 'GET', '/admin/v1/keys', { headers: { authorization: 'Bearer wrong' } });
    t.equal(admin.status, 401);
    t.equal(admin.body.error, 'admin_unauthorized');
    const publicPort = await request<ErrBody>(svc, 'GET', '/admin/v1/keys', { headers: { authorization: `Bearer ${svc.adminToken}` } });
    t.equal(publicPort.status, 404, 'key administration is not on the public listener');
    t.equal(publicPort.body.error, 'route_not_found');
  });

  t.test(`${mode.name}: tenancy`, async (t) => {
    const forbidden = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: otherKey, body: record() });
    t.equal(forbidden.status, 403);
    t.equal(forbidden.body.error, 'forbidden_tenant');
    const allowed = await request<Ingested>(svc, 'POST', '/api/v1/records', { key: multiKey, body: record({ tenantId: 'globex' }) });
    t.equal(allowed.status, 202);
    t.equal(allowed.body.tenantId, 'globex');
    const otherClient = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, body: record({ clientId: 'someone-else' }) });
    t.equal(otherClient.status, 403);
    t.equal(otherClient.body.error, 'forbidden_client');
    const q = await request<ErrBody>(svc, 'GET', '/api/v1/records?tenantId=acme', { key: otherKey });
    t.equal(q.status, 403);
    t.equal(q.body.error, 'forbidden_tenant');
    // A globex key sees none of acme's records even by filtering on their ids.
    const mine = await request<Page>(svc, 'GET', '/api/v1/records?tenantId=globex', { key: otherKey });
    t.equal(mine.status, 200);
    t.ok(mine.body.items.every((i) => i['tenantId'] === 'globex'));
  });

  t.test(`${mode.name}: validation answers 400 with one detail per field`, async (t) => {
    const r = await request<ErrBody>(svc, 'POST', '/api/v1/records', {
      key,
      body: { tenantId: 'acme', recordPayload: [1, 2], operationType: 'merge', sourceTimestamp: 'yesterday' },
    });
    t.equal(r.status, 400);
    t.equal(r.body.error, 'validation_failed');
    const c = codes(r.body);
    for (const expected of ['database:required', 'collection:required', 'recordId:required', 'operationType:invalid_enum', 'sourceTimestamp:invalid_format']) {
      t.ok(c.includes(expected), expected);
    }
    t.ok(c.some((x) => x.startsWith('recordPayload:')), 'recordPayload must be an object');
    t.equal(r.body.details.length, r.body.fieldErrors?.length);
    const bad = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw: '{"tenantId":' });
    t.equal(bad.status, 400);
    t.equal(bad.body.error, 'invalid_json');
    const notObject = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw: '[1]' });
    t.equal(notObject.status, 400);
    const nullPayload = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, body: record({ recordPayload: null }) });
    t.equal(nullPayload.status, 400);
    t.ok(codes(nullPayload.body).some((x) => x.startsWith('recordPayload:')));
  });

  t.test(`${mode.name}: I-JSON violations are rejected with their paths`, async (t) => {
    const base = '{"tenantId":"acme","database":"d","collection":"c","recordId":"r",';
    const cases: [string, string, string][] = [
      ['duplicate key', `${base}"recordPayload":{"a":1,"a":2}}`, 'recordPayload.a:duplicate_key'],
      ['unsafe integer', `${base}"recordPayload":{"n":9007199254740993}}`, 'recordPayload.n:unsafe_integer'],
      ['lone surrogate', `${base}"recordPayload":{"s":"\\ud800"}}`, 'recordPayload.s:lone_surrogate'],
      ['NaN', `${base}"recordPayload":{"x":NaN}}`, ''],
    ];
    for (const [name, raw, expected] of cases) {
      const r = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw });
      t.equal(r.status, 400, name);
      if (expected === '') t.equal(r.body.error, 'invalid_json', name);
      else t.ok(codes(r.body).includes(expected), `${name}: ${codes(r.body).join(',')}`);
    }
    let deep = '1';
    for (let i = 0; i < 70; i++) deep = `[${deep}]`;
    const d = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw: `${base}"recordPayload":{"x":${deep}}}` });
    t.equal(d.status, 400);
    t.ok(codes(d.body).some((x) => x.endsWith(':depth_exceeded')), codes(d.body).join(','));
    // 2^53-1 is safe and 1.0e400 is a float that overflows: the first passes.
    const ok = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, raw: `${base}"recordPayload":{"n":9007199254740991}}` });
    t.equal(ok.status, 202);
  });

  t.test(`${mode.name}: 404, 405, 415 and 413 carry the error body`, async (t) => {
    const nf = await request<ErrBody>(svc, 'GET', '/api/v1/nothing-here', { key });
    t.equal(nf.status, 404);
    t.equal(nf.body.error, 'route_not_found');
    t.ok(nf.headers.get('x-correlation-id'));
    const na = await request<ErrBody>(svc, 'DELETE', '/api/v1/records', { key });
    t.equal(na.status, 405);
    t.equal(na.body.error, 'method_not_allowed');
    t.match(na.headers.get('allow'), /GET/);
    t.match(na.headers.get('allow'), /POST/);
    const mt = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw: JSON.stringify(record()), headers: { 'content-type': 'text/plain' } });
    t.equal(mt.status, 415);
    t.equal(mt.body.error, 'unsupported_media_type');
    const big = JSON.stringify(record({ recordPayload: { blob: 'x'.repeat(1024 * 1024) } }));
    const tl = await refused(() => request<ErrBody>(svc, 'POST', '/api/v1/records', { key, raw: big }));
    t.equal(tl.status, 413);
    t.equal(tl.body.error, 'payload_too_large');
    const items = Array.from({ length: 17 }, (_, i) => record({ recordId: `big-${i}`, recordPayload: { blob: 'y'.repeat(1000 * 1000) } }));
    const tlb = await refused(() => request<ErrBody>(svc, 'POST', '/api/v1/records/bulk', { key, body: { items } }));
    t.equal(tlb.status, 413);
  });

  t.test(`${mode.name}: every documented operation answers for real (no 501), errors with the error body`, async (t) => {
    const doc = await request<{ paths: Record<string, Record<string, unknown>> }>(svc, 'GET', '/swagger/openapi.json');
    let operations = 0;
    for (const [route, methods] of Object.entries(doc.body.paths)) {
      for (const method of Object.keys(methods)) {
        const url = route.replace(/\{[^}]+\}/g, 'unknown-id');
        const r = await request<ErrBody>(svc, method.toUpperCase(), url, { key, ...(method === 'get' ? {} : { body: {} }) });
        operations += 1;
        t.not(r.status, 501, `${method.toUpperCase()} ${route}`);
        if (r.status >= 400) {
          t.type(r.body.error, 'string', `${method.toUpperCase()} ${route} error code`);
          t.ok(Array.isArray(r.body.details), `${method.toUpperCase()} ${route} details`);
        }
        t.notMatch(r.text, /at .*\.js/);
      }
    }
    t.ok(operations >= 19, 'the 15 spec endpoints, health, receipts and the policy administration');
  });

  t.test(`${mode.name}: bulk form A, form B, per-item rejection`, async (t) => {
    const a = await request<{ total: number; accepted: number; items: Ingested[]; rejected: unknown[] }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: [record({ recordId: 'a-1' }), { database: 'erp', collection: 'c', recordId: 'a-2', recordPayload: { v: 2 } }] },
    });
    t.equal(a.status, 202);
    t.equal(a.body.total, 2);
    t.equal(a.body.accepted, 2);
    t.same(a.body.rejected, []);
    t.ok(a.body.items.every((i) => HEX64.test(i.recordHash) && i.tenantId === 'acme'));
    const b = await request<{ total: number; accepted: number; items: (Ingested & { index: number })[]; rejected: { index: number; recordId: string | null; error: string; details: string[] }[] }>(
      svc,
      'POST',
      '/api/v1/records/bulk',
      {
        key: multiKey,
        raw:
          `{"items":[${JSON.stringify(record({ recordId: 'b-1' }))},` +
          `{"tenantId":"acme","database":"d","collection":"c","recordId":"b-2","recordPayload":{"k":1,"k":2}},` +
          `${JSON.stringify(record({ recordId: 'b-3', tenantId: 'globex' }))},` +
          `${JSON.stringify(record({ recordId: 'b-4', tenantId: 'initech' }))},` +
          `{"tenantId":"acme","recordId":"b-5","recordPayload":{}}]}`,
      },
    );
    t.equal(b.status, 202);
    t.equal(b.body.total, 5);
    t.equal(b.body.accepted, 2);
    t.same(b.body.items.map((i) => i.index), [0, 2]);
    t.same(b.body.rejected.map((r) => [r.index, r.error]), [
      [1, 'validation_failed'],
      [3, 'forbidden_tenant'],
      [4, 'validation_failed'],
    ]);
    t.equal(b.body.rejected[0]?.recordId, 'b-2');
    t.match(b.body.rejected[0]?.details[0], /^items\[1\]\.recordPayload\.k: /);
    const both = await request<ErrBody>(svc, 'POST', '/api/v1/records/bulk', { key, body: { tenantId: 'acme', records: [record()], items: [record()] } });
    t.equal(both.status, 400);
    t.ok(codes(both.body).includes('(body):ambiguous_form'));
    const empty = await request<ErrBody>(svc, 'POST', '/api/v1/records/bulk', { key, body: { items: [] } });
    t.equal(empty.status, 400);
    const tooMany = await request<ErrBody>(svc, 'POST', '/api/v1/records/bulk', { key, body: { items: Array.from({ length: 1001 }, () => record()) } });
    t.equal(tooMany.status, 400);
    t.ok(codes(tooMany.body).includes('items:invalid_count'));
    const allBad = await request<ErrBody & { rejected: unknown[] }>(svc, 'POST', '/api/v1/records/bulk', { key, body: { items: [{ tenantId: 'acme' }] } });
    t.equal(allBad.status, 400);
    t.equal(allBad.body.rejected.length, 1);
    const foreign = await request<ErrBody>(svc, 'POST', '/api/v1/records/bulk', { key, body: { tenantId: 'globex', records: [record({ tenantId: 'globex' })] } });
    t.equal(foreign.status, 403);
    const max = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: Array.from({ length: 1000 }, (_, i) => record({ collection: 'bulkmax', recordId: `m-${i}` })) },
    });
    t.equal(max.status, 202);
    t.equal(max.body.accepted, 1000);
  });

  t.test(`${mode.name}: idempotency`, async (t) => {
    const body = record({ recordId: 'idem-1' });
    const first = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, body, headers: { 'idempotency-key': 'k-1' } });
    t.equal(first.status, 202);
    t.equal(first.body.idempotencyReplayed, false);
    const again = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, body, headers: { 'idempotency-key': 'k-1' } });
    t.equal(again.status, 202);
    t.equal(again.body.idempotencyReplayed, true);
    t.equal(again.body.recordHash, first.body.recordHash);
    t.equal(again.body.ingestId, first.body.ingestId);
    const conflict = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key, body: { ...body, recordPayload: { other: true } }, headers: { 'idempotency-key': 'k-1' } });
    t.equal(conflict.status, 409);
    t.equal(conflict.body.error, 'idempotency_conflict');
    const inBody = record({ recordId: 'idem-2', idempotencyKey: 'k-2' });
    const f2 = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, body: inBody });
    const r2 = await request<Ingested>(svc, 'POST', '/api/v1/records', { key, body: inBody });
    t.equal(r2.body.idempotencyReplayed, true);
    t.equal(r2.body.ingestId, f2.body.ingestId);

    const race = record({ recordId: 'idem-race' });
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => request<Ingested>(svc, 'POST', '/api/v1/records', { key, body: race, headers: { 'idempotency-key': 'k-race' } })),
    );
    t.ok(answers.every((a) => a.status === 202), answers.map((a) => a.status).join(','));
    t.equal(new Set(answers.map((a) => a.body.ingestId)).size, 1, 'one acceptance');
    t.equal(answers.filter((a) => !a.body.idempotencyReplayed).length, 1, 'one original answer');
    // Give the indexer time to show any duplicate, then count.
    await eventually(async () => ((await countRecords(svc, key, 'tenantId=acme&recordId=idem-race')).items.length >= 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, 500));
    t.equal((await countRecords(svc, key, 'tenantId=acme&recordId=idem-race')).items.length, 1, 'exactly one record');

    const bulkBody = { tenantId: 'acme', records: [record({ recordId: 'idem-bulk' })] };
    const bf = await request<{ items: Ingested[] }>(svc, 'POST', '/api/v1/records/bulk', { key, body: bulkBody, headers: { 'idempotency-key': 'bulk-1' } });
    const br = await request<{ items: Ingested[] }>(svc, 'POST', '/api/v1/records/bulk', { key, body: bulkBody, headers: { 'idempotency-key': 'bulk-1' } });
    t.equal(br.status, 202);
    t.same(br.body.items.map((i) => i.ingestId), bf.body.items.map((i) => i.ingestId));
  });

  t.test(`${mode.name}: rate limit headers and 429`, async (t) => {
    const seen: number[] = [];
    let limited: { status: number; headers: Headers; body: ErrBody } | undefined;
    for (let i = 0; i < 30 && limited === undefined; i++) {
      const r = await request<ErrBody>(svc, 'GET', '/api/v1/records?tenantId=acme&limit=1', { key: premiumKey });
      if (r.status === 429) limited = r;
      else seen.push(Number(r.headers.get('x-ratelimit-remaining')));
    }
    t.equal(seen.length, 25, 'the whole allowance is usable');
    t.equal(seen[0], 24);
    t.equal(seen.at(-1), 0);
    t.ok(limited !== undefined);
    if (limited === undefined) return;
    t.equal(limited.body.status, 429);
    t.equal(limited.body.error, 'rate_limit_exceeded');
    t.ok(Number.isInteger(limited.body.retryAfter) && (limited.body.retryAfter ?? 0) > 0);
    t.ok(Number.isFinite(Date.parse(limited.body.resetTime ?? '')));
    t.equal(limited.headers.get('retry-after'), String(limited.body.retryAfter));
    t.equal(limited.headers.get('x-ratelimit-limit'), '25');
    t.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    t.equal(Number(limited.headers.get('x-ratelimit-reset')), Math.ceil(Date.parse(limited.body.resetTime ?? '') / 1000));
  });

  t.test(`${mode.name}: query records with filters, time range and paging`, async (t) => {
    const before = new Date(Date.now() - 1).toISOString();
    const ids = Array.from({ length: 7 }, (_, i) => `page-${i}`);
    const r = await request(svc, 'POST', '/api/v1/records/bulk', { key, body: { tenantId: 'acme', records: ids.map((id) => record({ collection: 'paged', recordId: id })) } });
    t.equal(r.status, 202);
    await eventually(async () => ((await countRecords(svc, key, 'tenantId=acme&collection=paged&limit=100')).items.length === 7 ? true : undefined));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p: Page = await countRecords(svc, key, `tenantId=acme&collection=paged&limit=3${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      seen.push(...p.items.map((i) => String(i['recordId'])));
      cursor = p.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    t.equal(pages, 3);
    t.same([...seen].sort(), [...ids].sort());
    t.equal((await countRecords(svc, key, `tenantId=acme&collection=paged&from=${encodeURIComponent(before)}`)).items.length, 7);
    t.equal((await countRecords(svc, key, `tenantId=acme&collection=paged&to=${encodeURIComponent(before)}`)).items.length, 0);
    t.equal((await countRecords(svc, key, 'tenantId=acme&collection=paged&recordId=page-3')).items.length, 1);
    t.equal((await countRecords(svc, key, 'tenantId=acme&collection=paged&database=nope')).items.length, 0);
    const missing = await request<ErrBody>(svc, 'GET', '/api/v1/records', { key });
    t.equal(missing.status, 400);
    t.ok(codes(missing.body).includes('tenantId:required'));
    const badRange = await request<ErrBody>(svc, 'GET', '/api/v1/records?tenantId=acme&from=tomorrow&limit=0', { key });
    t.equal(badRange.status, 400);
    t.same(codes(badRange.body).sort(), ['from:invalid_format', 'limit:out_of_range']);
  });

  t.test(`${mode.name}: OpenAPI document and Swagger UI`, async (t) => {
    const page = await request(svc, 'GET', '/swagger');
    t.equal(page.status, 200);
    t.match(page.headers.get('content-type'), /text\/html/);
    t.notMatch(page.text, /https?:\/\//, 'no external CDN');
    const asset = await request(svc, 'GET', '/swagger/assets/swagger-ui-bundle.js');
    t.equal(asset.status, 200);
    const doc = await request<Record<string, unknown>>(svc, 'GET', '/swagger/openapi.json');
    t.equal(doc.status, 200);
    t.equal(doc.body['openapi'], '3.1.0');
    t.equal((doc.body['info'] as { version: string }).version, '1.0.0');
    const validated = (await SwaggerParser.validate(structuredClone(doc.body) as never)) as unknown as { paths: Record<string, Record<string, { operationId: string }>> };
    const ops = Object.entries(validated.paths).flatMap(([p, m]) => Object.entries(m).map(([verb, o]) => `${verb.toUpperCase()} ${p} ${o.operationId}`));
    for (const expected of [
      'POST /api/v1/records IngestRecord',
      'POST /api/v1/records/bulk BulkIngestRecords',
      'GET /api/v1/records QueryRecords',
      'POST /api/v1/verify/record VerifyRecord',
      'POST /api/v1/verify/payload VerifyPayload',
      'GET /api/v1/verify/snapshot/{snapshotId} VerifySnapshot',
      'GET /api/v1/verify/history GetVerificationHistory',
      'GET /api/v1/snapshots ListSnapshots',
      'GET /api/v1/snapshots/{snapshotId} GetSnapshot',
      'GET /api/v1/snapshots/{snapshotId}/lifecycle GetSnapshotLifecycle',
      'POST /api/v1/snapshots/{snapshotId}/retry RetrySnapshot',
      'GET /api/v1/batches/{batchId} GetBatch',
      'GET /api/v1/timeline/record GetRecordTimeline',
      'GET /api/v1/audit/history GetAuditHistory',
      'POST /api/v1/evidence/retrieval-controls CheckRetrievalControls',
      'GET /api/Admin/health GetHealth',
      // Beside the spec's: receipts, and the operators' retrieval policies.
      'GET /api/v1/receipts/record GetRecordReceipt',
      'GET /admin/v1/tenants/{tenantId}/retrieval-policy GetRetrievalPolicy',
      'PUT /admin/v1/tenants/{tenantId}/retrieval-policy PutRetrievalPolicy',
      // The key administration, the detailed health report and the embedded node's IPFS gateway.
      'GET /admin/v1/health GetHealthDetail',
      'POST /admin/v1/keys CreateApiKey',
      'GET /admin/v1/keys ListApiKeys',
      'POST /admin/v1/keys/{keyId}/revoke RevokeApiKey',
      'POST /admin/v1/keys/{keyId}/rotate RotateApiKey',
      'GET /ipfs/{cid} GetIpfsContent',
    ]) {
      t.ok(ops.includes(expected), expected);
    }
    t.equal(ops.length, 25, '15 endpoints, the health check, receipts, the policy and key administration, the detailed health report, the IPFS gateway');
    const schemes = (doc.body['components'] as { securitySchemes: Record<string, unknown> }).securitySchemes;
    t.same(schemes['ApiKey'], { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  });

  t.test(`${mode.name}: the keys CLI works against the running service`, async (t) => {
    const run = promisify(execFile);
    const cliEnv = { ...process.env, DRIS_ADMIN_URL: svc.adminUrl, DRIS_ADMIN_TOKEN: svc.adminToken };
    const created = JSON.parse((await run(process.execPath, [cliPath, 'keys', 'create', '--tenant', 'acme', '--client', 'cli', '--level', 'premium', '--also-tenants', 'globex'], { env: cliEnv })).stdout) as {
      apiKey: string;
      key: { keyId: string; level: string; alsoTenants: string[] };
    };
    t.match(created.apiKey, /^dris_[a-z2-7]{16}_[a-z2-7]{59}$/);
    t.equal(created.key.level, 'premium');
    t.same(created.key.alsoTenants, ['globex']);
    const ok = await request(svc, 'POST', '/api/v1/records', { key: created.apiKey, body: record({ tenantId: 'globex' }) });
    t.equal(ok.status, 202);
    const listed = JSON.parse((await run(process.execPath, [cliPath, 'keys', 'list', '--tenant', 'acme'], { env: cliEnv })).stdout) as { items: { keyId: string; secretHash?: string }[] };
    t.ok(listed.items.some((k) => k.keyId === created.key.keyId));
    t.ok(listed.items.every((k) => k.secretHash === undefined), 'no secret hashes listed');
    const rotated = JSON.parse((await run(process.execPath, [cliPath, 'keys', 'rotate', created.key.keyId], { env: cliEnv })).stdout) as { apiKey: string; key: { keyId: string } };
    t.equal((await request(svc, 'POST', '/api/v1/records', { key: rotated.apiKey, body: record() })).status, 202);
    const old = await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: created.apiKey, body: record() });
    t.equal(old.status, 401);
    t.equal(old.body.error, 'revoked_api_key');
    await run(process.execPath, [cliPath, 'keys', 'revoke', rotated.key.keyId], { env: cliEnv });
    // Without a URL the CLI finds the listener as the service binds it: DRIS_ADMIN_HOST / DRIS_ADMIN_PORT.
    const derivedEnv = { ...process.env, DRIS_ADMIN_HOST: '0.0.0.0', DRIS_ADMIN_PORT: String(svc.adminPort), DRIS_ADMIN_TOKEN: svc.adminToken };
    const derived = JSON.parse((await run(process.execPath, [cliPath, 'keys', 'list', '--tenant', 'acme'], { env: derivedEnv })).stdout) as { items: unknown[] };
    t.ok(derived.items.length > 0);
    const unknownPort = await run(process.execPath, [cliPath, 'keys', 'list'], { env: { ...derivedEnv, DRIS_ADMIN_PORT: '0' } }).then(
      () => null,
      (err: { code?: number; stderr?: string }) => err,
    );
    t.equal(unknownPort?.code, 2, 'port 0 cannot be derived: the CLI says to pass --url');
    t.match(unknownPort?.stderr, /DRIS_ADMIN_URL/);
    t.equal((await request<ErrBody>(svc, 'POST', '/api/v1/records', { key: rotated.apiKey, body: record() })).body.error, 'revoked_api_key');
  });

  t.test(`${mode.name}: 1000 records survive SIGKILL right after the last 202`, async (t) => {
    const ids = Array.from({ length: 1000 }, (_, i) => `dur-${i}`);
    // Concurrent single-record requests: the queue's group commit is what is being tested.
    const answers: number[] = [];
    for (let i = 0; i < ids.length; i += 100) {
      const chunk = ids.slice(i, i + 100);
      answers.push(
        ...(await Promise.all(chunk.map(async (id) => (await request(svc, 'POST', '/api/v1/records', { key, body: record({ collection: 'durable', recordId: id }) })).status))),
      );
    }
    t.ok(answers.every((s) => s === 202));
    svc = await svc.crashAndRestart();
    const all = await eventually(
      async () => {
        const found: string[] = [];
        let cursor: string | null = null;
        do {
          const p: Page = await countRecords(svc, key, `tenantId=acme&collection=durable&limit=1000${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
          found.push(...p.items.map((i) => String(i['recordId'])));
          cursor = p.nextCursor;
        } while (cursor !== null);
        return found.length >= 1000 ? found : undefined;
      },
      60_000,
      250,
    );
    t.equal(all.length, 1000, 'each exactly once');
    t.same([...all].sort(), [...ids].sort());
  });
}

import t from 'tap';
import { request, startService } from '../harness/service.js';
import { rawRequest } from './raw-http.js';

/**
 * Without the native addon the service still runs, without the request-framing guard: it says so
 * once at start, and everything but the checks of malformed heads holds.
 */

void t.test('no native addon: one warning, the service serves, body limits still hold', async (t) => {
  const svc = await startService({ env: { DRIS_NATIVE_ADDON: '/nonexistent/dris-native.node', DRIS_HASH_BACKEND: 'wasm' } });
  t.teardown(() => svc.dispose());
  const warnings = svc.logs.filter((l) => l.includes('HTTP guard not installed'));
  t.equal(warnings.length, 1, 'warned once');
  t.ok(svc.logs.some((l) => l.includes('"msg":"listening"') && l.includes('"httpGuard":false')));
  const record = JSON.stringify({ tenantId: 'default', database: 'd', collection: 'c', recordId: 'r1', recordPayload: { a: 1 } });
  t.equal((await request(svc, 'POST', '/api/v1/records', { key: svc.bootstrapKey, raw: record })).status, 202);
  const big = await rawRequest(svc.port, `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.bootstrapKey}\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n{`);
  t.equal(big.status, 413, 'a declared body over the limit is still refused before it is read');
  t.ok(big.closed);
  t.equal((await request(svc, 'GET', '/api/Admin/health')).status, 200);
});

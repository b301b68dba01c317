import t from 'tap';
import { Router, type Route } from '../../src/http/router.js';

const route = (method: Route['method'], pattern: string, operationId: string): Route => ({ method, pattern, operationId, auth: 'none', handle: () => Promise.resolve({ status: 200, body: {} }) });

const router = new Router([
  route('POST', '/api/v1/records', 'IngestRecord'),
  route('GET', '/api/v1/records', 'QueryRecords'),
  route('POST', '/api/v1/records/bulk', 'BulkIngestRecords'),
  route('GET', '/api/v1/snapshots/:snapshotId', 'GetSnapshot'),
  route('GET', '/api/v1/snapshots/:snapshotId/lifecycle', 'GetSnapshotLifecycle'),
]);

t.test('matches methods, paths and parameters', async (t) => {
  t.match(router.match('POST', '/api/v1/records'), { kind: 'found', route: { operationId: 'IngestRecord' } });
  t.match(router.match('GET', '/api/v1/records/'), { kind: 'found', route: { operationId: 'QueryRecords' } });
  t.match(router.match('GET', '/api/v1/snapshots/s%2F1'), { kind: 'found', params: { snapshotId: 's/1' } });
  t.match(router.match('GET', '/api/v1/snapshots/abc/lifecycle'), { kind: 'found', route: { operationId: 'GetSnapshotLifecycle' }, params: { snapshotId: 'abc' } });
});

t.test('405 lists allowed methods, 404 otherwise', async (t) => {
  t.same(router.match('DELETE', '/api/v1/records'), { kind: 'method_not_allowed', allow: ['POST', 'GET', 'HEAD'] });
  t.same(router.match('GET', '/api/v1/records/bulk'), { kind: 'method_not_allowed', allow: ['POST'] });
  t.same(router.match('GET', '/api/v1/nothing'), { kind: 'not_found' });
  t.match(router.match('HEAD', '/api/v1/snapshots/abc'), { kind: 'found', route: { operationId: 'GetSnapshot' } }, 'HEAD takes the GET route');
  t.same(router.match('HEAD', '/api/v1/records/bulk'), { kind: 'method_not_allowed', allow: ['POST'] });
  t.same(router.match('GET', '/api/v1/snapshots/%E0%A4%A'), { kind: 'not_found' }, 'undecodable parameter');
});

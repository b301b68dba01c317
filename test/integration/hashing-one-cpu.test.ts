import { createHash } from 'node:crypto';
import t from 'tap';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { createKey, request, startService } from '../harness/service.js';

/**
 * A service that may run on one CPU (taskset) hashes on the event loop, without a worker pool;
 * a bulk body above the inline threshold (128 KiB, which would otherwise go to a worker) is
 * answered as anywhere else.
 */

t.test('on one CPU the api hashes inline, large bodies included', async (t) => {
  const inline: unknown[] = [];
  const svc = await startService({
    pinCpu: '0',
    onLog: (rec) => {
      if (rec['msg'] === 'hashing inline: the process runs on one CPU') inline.push(rec['cpus']);
    },
  });
  t.teardown(() => svc.dispose());
  t.same(inline, [1], 'said once, with the CPUs it saw');
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const records = Array.from({ length: 300 }, (_, i) => ({ database: 'd', collection: 'c', recordId: `r-${i}`, recordPayload: { i, text: 'x'.repeat(1000) } }));
  const body = { tenantId: 'acme', records };
  t.ok(Buffer.byteLength(JSON.stringify(body)) > 128 * 1024, 'above the inline threshold');
  const r = await request<{ accepted: number; items: { payloadHash: string }[] }>(svc, 'POST', '/api/v1/records/bulk', { key, body });
  t.equal(r.status, 202);
  t.equal(r.body.accepted, 300);
  t.same(
    r.body.items.map((x) => x.payloadHash),
    records.map((x) => createHash('sha256').update(canonicalize(x.recordPayload)).digest('hex')),
    'every payload hashed as RFC 8785 text',
  );
});

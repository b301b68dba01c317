import t from 'tap';
import { createKey, eventually, request, startService } from '../harness/service.js';

/**
 * dris killed with SIGKILL while a batch is open (records accepted, timer not yet fired): on
 * restart the same records form the batch, none is lost, and the batch is anchored once.
 */

interface Snap {
  snapshotId: string;
  status: string;
  recordCount: number;
  batchId: string;
}

t.test('a batch open at SIGKILL is formed and anchored once after restart', async (t) => {
  const env = { DRIS_BATCH_MAX_WAIT_MS: '4000', DRIS_RATE_LIMITS: 'standard=1000000' };
  let svc = await startService({ env });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const accepted = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
    key,
    body: { tenantId: 'acme', records: Array.from({ length: 600 }, (_, i) => ({ database: 'd', collection: 'crash', recordId: `c-${i}`, recordPayload: { i } })) },
  });
  t.equal(accepted.status, 202);
  t.equal(accepted.body.accepted, 600);
  const before = await request<{ items: Snap[] }>(svc, 'GET', '/api/v1/snapshots', { key });
  t.equal(before.body.items.length, 0, 'the batch is still open');
  await svc.kill('SIGKILL');

  svc = await startService({ env, dataDir: svc.dataDir });
  const snaps = await eventually(
    async () => {
      const r = await request<{ items: Snap[] }>(svc, 'GET', '/api/v1/snapshots', { key });
      return r.body.items.length > 0 && r.body.items.every((s) => s.status === 'Anchored') ? r.body.items : undefined;
    },
    60_000,
    300,
  );
  t.equal(snaps.length, 1, 'one snapshot');
  t.equal(snaps[0]?.recordCount, 600, 'every record, none split off');
  const batch = await request<{ batchSeq: number; recordCount: number }>(svc, 'GET', `/api/v1/batches/${snaps[0]?.batchId ?? ''}`, { key });
  t.equal(batch.body.batchSeq, 1, 'anchored once: the first and only sequence');
  t.equal(batch.body.recordCount, 600);
  // Nothing else is waiting to be anchored a second time.
  await new Promise((r) => setTimeout(r, 5000));
  const after = await request<{ items: Snap[] }>(svc, 'GET', '/api/v1/snapshots', { key });
  t.equal(after.body.items.length, 1);
});

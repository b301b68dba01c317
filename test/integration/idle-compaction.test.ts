import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ClickHouseEvidenceStore } from '../../src/adapters/clickhouse/evidence-store.js';
import { IdleCompaction } from '../../src/adapters/clickhouse/idle-compaction.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { sampleRecord } from '../harness/records.js';

/**
 * The embedded engine merges record_evidence_packed into one part once writes have stopped for the idle
 * time, and not before; look-ups answer the same before and after.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-compaction-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const hashing = new JsHashingBackend();
const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: join(root, 'clickhouse') } });
await index.database.migrate();
t.teardown(() => index.close());

const BASE_MS = Date.parse('2025-10-01T00:00:00.000Z');
const records: AcceptedRecord[] = Array.from({ length: 60 }, (_, i) => ({
  ...sampleRecord(i),
  tenantId: 'acme',
  recordId: `c-${i}`,
  ingestId: `01JCOMPACT${String(i).padStart(16, '0')}`,
  recordHash: hashing.sha256Hex(Buffer.from(`c-${i}`)),
  acceptedAt: new Date(BASE_MS + i).toISOString(),
}));

async function parts(): Promise<number> {
  const [row] = await index.database.runner.query<{ n: number | string }>(`SELECT count() AS n FROM system.parts WHERE active AND database = 'dris' AND table = 'record_evidence_packed'`);
  return Number(row?.n);
}

void t.test('merged once idle, not while writes are recent', async (t) => {
  await index.database.runner.exec('SYSTEM STOP MERGES dris.record_evidence_packed');
  // Three inserts, three parts: the engine's merges are held off so that only the compaction merges.
  for (let k = 0; k < 3; k++) await index.records.insertRecords(records.slice(k * 20, (k + 1) * 20));
  t.equal(await parts(), 3);
  const evidence = new ClickHouseEvidenceStore(index.database);
  const before = await Promise.all(records.map((r) => evidence.findRecord({ tenantId: 'acme', collection: r.collection, recordId: r.recordId })));
  await index.database.runner.exec('SYSTEM START MERGES dris.record_evidence_packed');

  let clock = Date.now();
  const compaction = new IdleCompaction(index.database, { idleMs: 600_000, now: () => clock });
  t.same(await compaction.runOnce(), [], 'the newest part is younger than the idle time: nothing merged');
  t.ok((await parts()) >= 1);
  clock += 601_000;
  const merged = await compaction.runOnce();
  t.same(merged, ['record_evidence_packed'], 'idle: the table is merged');
  t.equal(await parts(), 1, 'into one part');
  t.same(await compaction.runOnce(), [], 'one part: nothing more to do');
  const after = await Promise.all(records.map((r) => evidence.findRecord({ tenantId: 'acme', collection: r.collection, recordId: r.recordId })));
  t.same(after, before, 'look-ups answer the same');

  // A trickle: one record more, one small part beside the large one. Not worth rewriting the table.
  await index.database.runner.exec('SYSTEM STOP MERGES dris.record_evidence_packed');
  await index.records.insertRecords([{ ...(records[0] as AcceptedRecord), recordId: 'c-late', ingestId: `01JCOMPACT${'9'.repeat(16)}` }]);
  t.equal(await parts(), 2);
  await index.database.runner.exec('SYSTEM START MERGES dris.record_evidence_packed');
  clock += 601_000;
  t.same(await compaction.runOnce(), [], 'a part of less than a tenth of the largest one: left to the engine');
  await compaction.stop();
});

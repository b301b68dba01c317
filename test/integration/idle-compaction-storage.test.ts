import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { sampleRecord } from '../harness/records.js';

/**
 * The embedded storage opened with compactIdleMs looks at its look-up table on its own and merges
 * it once idle (one engine per process: this file holds that storage alone).
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-compaction-storage-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

const hashing = new JsHashingBackend();
const BASE_MS = Date.parse('2025-10-02T00:00:00.000Z');
const records: AcceptedRecord[] = Array.from({ length: 60 }, (_, i) => ({
  ...sampleRecord(i),
  tenantId: 'acme',
  recordId: `s-${i}`,
  ingestId: `01JCOMPACTS${String(i).padStart(15, '0')}`,
  recordHash: hashing.sha256Hex(Buffer.from(`s-${i}`)),
  acceptedAt: new Date(BASE_MS + i).toISOString(),
}));

void t.test('the storage runs it when asked to, and stops it on close', async (t) => {
  const { storage } = await openClickHouseStorage({ engine: { kind: 'embedded', path: join(root, 'clickhouse'), compactIdleMs: 1 } });
  await storage.database.migrate();
  await storage.database.runner.exec('SYSTEM STOP MERGES dris.record_evidence_packed');
  for (let k = 0; k < 2; k++) await storage.records.insertRecords(records.slice(k * 30, (k + 1) * 30));
  await storage.database.runner.exec('SYSTEM START MERGES dris.record_evidence_packed');
  const count = async (): Promise<number> =>
    Number((await storage.database.runner.query<{ n: number | string }>(`SELECT count() AS n FROM system.parts WHERE active AND database = 'dris' AND table = 'record_evidence_packed'`))[0]?.n);
  const deadline = Date.now() + 20_000;
  while ((await count()) > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.equal(await count(), 1, 'merged within the check interval (a second for an idle time of 1 ms)');
  await storage.close();
});

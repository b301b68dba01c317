import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import type { AuditEvent } from '../../src/domain/audit/ports.js';
import { verificationAuditEvent } from '../../src/domain/audit/verification-events.js';
import type { VerificationHistoryEntry } from '../../src/domain/verification/types.js';
import { setLogLevel } from '../../src/util/logger.js';

/**
 * The embedded engine's journal for the audit trail and the verification history: appends return
 * once durable in the journal, and every read sees what was appended before it.
 */

setLogLevel('silent');

const root = mkdtempSync(join(tmpdir(), 'dris-index-journal-'));
t.teardown(() => {
  rmSync(root, { recursive: true, force: true });
});
const options = { engine: { kind: 'embedded', path: join(root, 'clickhouse') }, journalDir: join(root, 'index-journal') } as const;
const BASE_MS = Date.parse('2026-01-01T00:00:00.000Z');

function event(i: number): AuditEvent {
  return { eventId: `ev-${String(i).padStart(4, '0')}`, atMs: BASE_MS + i, tenantId: 'acme', clientId: 'app', keyId: 'k', action: 'evidence.access', resource: `record:invoices/inv-${i}`, outcome: 'pass', correlationId: `c-${i}`, detail: { n: i } };
}

function entry(i: number): VerificationHistoryEntry {
  return {
    verificationId: `ver-${String(i).padStart(4, '0')}`,
    at: new Date(BASE_MS + i).toISOString(),
    tenantId: 'acme',
    clientId: 'app',
    keyId: 'k',
    mode: 'stored',
    database: 'erp',
    collection: 'invoices',
    recordId: `inv-${i}`,
    recordVersion: '1',
    snapshotId: null,
    batchId: null,
    verified: true,
    verificationStatus: 'pass',
    reasonCategory: 'verified_anchored',
    correlationId: `c-${i}`,
  };
}

t.test('audit and history appends go through the journal and read back at once', async (t) => {
  const index = (await openClickHouseStorage(options)).storage;
  await index.database.migrate();
  // The journal makes their rows durable (it flushes the engine's file system), so their inserts skip it.
  const settings = await index.database.runner.query<{ name: string; create_table_query: string }>(
    `SELECT name, create_table_query FROM system.tables WHERE database = 'dris' AND name IN ('verifications', 'audit_events') ORDER BY name`,
  );
  t.same(
    settings.map((r) => [r.name, /fsync_after_insert = 0, fsync_part_directory = 0/.test(r.create_table_query)]),
    [
      ['audit_events', true],
      ['verifications', true],
    ],
  );
  const evidence = index.history;
  await Promise.all(Array.from({ length: 300 }, (_, i) => Promise.all([index.audit.append([event(i)]), evidence.append([entry(i)])])));
  t.equal(index.stats().auditInserts, 0, 'no insert of the index own writer');

  // The trail lists the verifications from their history rows, beside its own events.
  const audit = await index.audit.query({ tenantId: 'acme', limit: 1000 });
  t.equal(audit.items.length, 600);
  t.same(audit.items.slice(0, 2), [verificationAuditEvent(entry(299)), event(299)]);
  const history = await evidence.query({ tenantId: 'acme', limit: 1000 });
  t.equal(history.items.length, 300);
  t.same(history.items.at(-1), entry(0));

  // Written, then read right away: the read waits for its copy, in either table.
  await index.audit.append([event(300)]);
  t.same((await index.audit.query({ tenantId: 'acme', limit: 1 })).items, [event(300)]);
  await evidence.append([entry(301)]);
  t.same((await index.audit.query({ tenantId: 'acme', action: 'verify.record', limit: 1 })).items, [verificationAuditEvent(entry(301))]);
  await index.close();
});

t.test('what the journal held at close is in the tables after a restart', async (t) => {
  const index = (await openClickHouseStorage(options)).storage;
  await index.database.migrate();
  await index.audit.append([event(301), event(302)]);
  await index.close();
  const again = (await openClickHouseStorage(options)).storage;
  await again.database.migrate();
  const audit = await again.audit.query({ tenantId: 'acme', action: 'evidence.access', limit: 3 });
  t.same(audit.items.map((e) => e.eventId), ['ev-0302', 'ev-0301', 'ev-0300']);
  await again.close();
});

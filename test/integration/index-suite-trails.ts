import type { Test } from 'tap';
import { ClickHouseVerificationHistory } from '../../src/adapters/clickhouse/history-store.js';
import type { AuditEvent } from '../../src/domain/audit/ports.js';
import { verificationAuditEvent } from '../../src/domain/audit/verification-events.js';
import type { ApiKeyRecord } from '../../src/domain/keys/types.js';
import type { VerificationHistoryEntry } from '../../src/domain/verification/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { BASE_MS, hex } from './index-fixtures.js';
import type { IndexUnderTest } from './index-suite.js';

/** The index suite's keys, audit trail, verification history and error checks (see index-suite.ts). */
export function indexTrailSuite(t: Test, ctx: IndexUnderTest): void {
  t.test('api keys: put, get, list, count, revoke by re-put', async (t) => {
    const key = (keyId: string, tenantId: string, createdAtMs: number, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
      keyId,
      tenantId,
      clientId: 'cli',
      level: 'standard',
      secretHash: hex(keyId, 64),
      createdAtMs,
      expiresAtMs: null,
      revokedAtMs: null,
      alsoTenants: [],
      rotatedFrom: null,
      ...over,
    });
    t.equal(await ctx.index.keys.countKeys(), 0);
    t.equal(await ctx.index.keys.getKey('k-missing'), null);
    const a = key('k-a', 'ten-1', BASE_MS, { level: 'premium', expiresAtMs: BASE_MS + 86_400_000, alsoTenants: ['ten-2', 'ten-3'] });
    const b = key('k-b', 'ten-1', BASE_MS + 1000, { rotatedFrom: 'k-a' });
    const c = key('k-c', 'ten-2', BASE_MS + 2000, { level: 'enterprise' });
    await ctx.index.keys.putKey(a);
    await ctx.index.keys.putKey(b);
    await ctx.index.keys.putKey(c);
    t.same(await ctx.index.keys.getKey('k-a'), a);
    t.same(await ctx.index.keys.listKeys('ten-1'), [b, a]);
    t.same(await ctx.index.keys.listKeys(), [c, b, a]);
    t.equal(await ctx.index.keys.countKeys(), 3);

    // Revocation right after creation (same millisecond) must still win.
    const revoked = { ...a, revokedAtMs: BASE_MS + 5000 };
    await ctx.index.keys.putKey(revoked);
    t.same(await ctx.index.keys.getKey('k-a'), revoked);
    t.equal(await ctx.index.keys.countKeys(), 3);
    t.same(await ctx.index.keys.listKeys('ten-1'), [b, revoked]);
  });

  /** Every event of a tenant's trail, a page of `limit` at a time, following the cursors. */
  async function auditPages(tenantId: string, limit: number): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p = await ctx.index.audit.query({ tenantId, limit, ...(cursor === null ? {} : { cursor }) });
      ids.push(...p.items.map((i) => i.eventId));
      cursor = p.nextCursor;
      pages += 1;
    } while (cursor !== null && pages < 50);
    return { ids, pages };
  }

  t.test('audit: append coalesced, query newest first with filters and paging', async (t) => {
    const tenant = 'tenant-a';
    const ev = (i: number, over: Partial<AuditEvent> = {}): AuditEvent => ({
      eventId: `ev-${String(i).padStart(4, '0')}`,
      atMs: BASE_MS + Math.floor(i / 2) * 1000,
      tenantId: tenant,
      clientId: i % 2 === 0 ? 'cli-even' : 'cli-odd',
      keyId: i % 3 === 0 ? 'key-3' : 'key-x',
      action: i % 5 === 0 ? 'key.create' : 'record.ingest',
      resource: `record:${i}`,
      outcome: 'success',
      correlationId: `corr-${i}`,
      ...over,
    });
    const events = Array.from({ length: 40 }, (_, i) => ev(i, i === 7 ? { detail: { count: 3, list: ['a'] } } : i === 8 ? { detail: {} } : {}));
    const before = ctx.index.stats();
    await Promise.all(events.map((e) => ctx.index.audit.append([e])));
    t.ok(ctx.index.stats().auditInserts - before.auditInserts <= 5);
    // An append retried after an ambiguous failure: the event is listed once.
    const dup = events[11];
    if (dup === undefined) throw new Error('fixture');
    await ctx.index.audit.append([dup]);
    await ctx.index.audit.append([ev(99, { tenantId: 'tenant-b' })]);

    const newestFirst = [...events].sort((x, y) => (x.atMs === y.atMs ? (x.eventId < y.eventId ? 1 : -1) : y.atMs - x.atMs));
    const page = await ctx.index.audit.query({ tenantId: tenant, limit: 100 });
    t.same(page.items, newestFirst);
    t.equal(page.nextCursor, null);

    const paged = await auditPages(tenant, 6);
    t.equal(paged.pages, 7);
    t.same(paged.ids, newestFirst.map((e) => e.eventId));

    const byAction = await ctx.index.audit.query({ tenantId: tenant, action: 'key.create', limit: 100 });
    t.same(byAction.items.map((e) => e.eventId), newestFirst.filter((e) => e.action === 'key.create').map((e) => e.eventId));
    const byKey = await ctx.index.audit.query({ tenantId: tenant, keyId: 'key-3', clientId: 'cli-even', limit: 100 });
    t.same(
      byKey.items.map((e) => e.eventId),
      newestFirst.filter((e) => e.keyId === 'key-3' && e.clientId === 'cli-even').map((e) => e.eventId),
    );
    const byTime = await ctx.index.audit.query({ tenantId: tenant, fromMs: BASE_MS + 3000, toMs: BASE_MS + 5000, limit: 100 });
    t.same(byTime.items.map((e) => e.eventId), ['ev-0009', 'ev-0008', 'ev-0007', 'ev-0006']);
    t.same((await ctx.index.audit.query({ tenantId: 'tenant-b', limit: 10 })).items.map((e) => e.eventId), ['ev-0099']);
  });

  t.test('audit: verifications are listed from their history rows, beside the events', async (t) => {
    const tenant = 'tenant-v';
    const history = new ClickHouseVerificationHistory(ctx.index.database);
    const at = (i: number): number => BASE_MS + 100_000 + i * 1000;
    const modes = ['stored', 'payload', 'batch', 'hash', 'snapshot'] as const;
    const entry = (i: number, over: Partial<VerificationHistoryEntry> = {}): VerificationHistoryEntry => {
      const mode = modes[i % modes.length] ?? 'stored';
      const onRecord = mode !== 'snapshot' && mode !== 'hash';
      return {
        verificationId: `ver-${String(i).padStart(4, '0')}`,
        at: new Date(at(i)).toISOString(),
        tenantId: tenant,
        clientId: i % 2 === 0 ? 'cli-even' : 'cli-odd',
        keyId: i % 3 === 0 ? 'key-3' : 'key-x',
        mode,
        database: onRecord ? 'erp' : null,
        collection: onRecord ? 'invoices' : null,
        recordId: onRecord ? `inv-${i}` : null,
        recordVersion: onRecord ? '1' : null,
        snapshotId: onRecord ? null : `snap-${i}`,
        batchId: i % 4 === 0 ? null : `batch-${i}`,
        verified: i % 5 !== 1,
        verificationStatus: i % 5 === 1 ? 'fail' : 'pass',
        reasonCategory: i % 5 === 1 ? 'payload_mismatch' : 'verified_anchored',
        correlationId: `corr-v${i}`,
        ...over,
      };
    };
    const ev = (i: number): AuditEvent => ({
      eventId: `ev-${String(i).padStart(4, '0')}`,
      atMs: at(i),
      tenantId: tenant,
      clientId: 'cli-even',
      keyId: 'key-3',
      action: 'evidence.access',
      resource: `record:invoices/inv-${i}`,
      outcome: 'allowed',
      correlationId: `corr-e${i}`,
      detail: { purpose: 'audit' },
    });
    const entries = Array.from({ length: 20 }, (_, i) => entry(i));
    const events = Array.from({ length: 10 }, (_, i) => ev(i * 2 + 1));
    await Promise.all(entries.map((e) => history.append([e])));
    await ctx.index.audit.append(events);
    // A retried append stores an entry twice; the entry of another tenant stays there.
    await history.append([entries[4] ?? entry(4)]);
    await history.append([entry(50, { tenantId: 'tenant-w' })]);
    // What an earlier version wrote beside each history row: the same facts, not listed again.
    await ctx.index.audit.append(entries.slice(0, 5).map((e) => ({ ...verificationAuditEvent(e), eventId: `old-${e.verificationId}` })));

    const expected = [...entries.map(verificationAuditEvent), ...events].sort((x, y) => y.atMs - x.atMs || (x.eventId < y.eventId ? 1 : -1));
    t.same((await ctx.index.audit.query({ tenantId: tenant, limit: 100 })).items, expected);
    const listed = new Map((await ctx.index.audit.query({ tenantId: tenant, limit: 100 })).items.map((e) => [e.eventId, e]));
    t.same(listed.get('ver-0001'), {
      eventId: 'ver-0001',
      atMs: at(1),
      tenantId: tenant,
      clientId: 'cli-odd',
      keyId: 'key-x',
      action: 'verify.record',
      resource: 'record:invoices/inv-1',
      outcome: 'fail',
      correlationId: 'corr-v1',
      detail: { reasonCategory: 'payload_mismatch', mode: 'payload', verified: false },
    });
    t.match(listed.get('ver-0003'), { action: 'verify.payload', resource: 'snapshot:snap-3', detail: { mode: 'hash', verified: true } });
    t.match(listed.get('ver-0004'), { action: 'verify.snapshot', resource: 'snapshot:snap-4', outcome: 'pass' });

    t.same((await auditPages(tenant, 4)).ids, expected.map((e) => e.eventId), 'pages across both tables, in order, without overlap');

    for (const action of ['verify.record', 'verify.payload', 'verify.snapshot', 'evidence.access']) {
      const page = await ctx.index.audit.query({ tenantId: tenant, action, limit: 100 });
      t.same(page.items, expected.filter((e) => e.action === action), action);
      t.ok(page.items.length > 0, `${action} is reached`);
    }
    const byActor = await ctx.index.audit.query({ tenantId: tenant, keyId: 'key-3', clientId: 'cli-even', limit: 100 });
    t.same(byActor.items, expected.filter((e) => e.keyId === 'key-3' && e.clientId === 'cli-even'));
    const byTime = await ctx.index.audit.query({ tenantId: tenant, fromMs: at(3), toMs: at(6), limit: 100 });
    t.same(byTime.items.map((e) => e.eventId), ['ver-0005', 'ev-0005', 'ver-0004', 'ver-0003', 'ev-0003']);
    t.same((await ctx.index.audit.query({ tenantId: 'tenant-w', limit: 10 })).items, [verificationAuditEvent(entry(50, { tenantId: 'tenant-w' }))]);
    await history.close();
  });

  t.test('engine errors become DrisErrors; insert errors carry no row data', async (t) => {
    await t.rejects(ctx.raw.query('SELECT * FROM dris.no_such_table'), { code: 'internal_error' });
    const secret = 'PAYLOAD-MUST-NOT-LEAK';
    const err = await ctx.raw
      .insertJsonEachRow('dris.records', [{ tenant_id: 't', accepted_at: 'not a time', payload: secret }])
      .then(
        () => null,
        (e: unknown) => e,
      );
    t.ok(err instanceof DrisError);
    t.equal((err as DrisError).code, 'internal_error');
    const cause = (err as DrisError).cause;
    t.notOk(String(cause instanceof Error ? cause.message : cause).includes(secret));
    t.notOk((err as DrisError).message.includes(secret));
  });
}

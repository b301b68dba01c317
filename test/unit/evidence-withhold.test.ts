import t from 'tap';
import { EvidenceAccess } from '../../src/app/evidence-access.js';
import type { Principal } from '../../src/app/authenticator.js';
import type { AuditEvent, AuditLog } from '../../src/domain/audit/ports.js';
import type { RetrievalPolicy, RetrievalPolicyStore, StoredPolicy } from '../../src/domain/evidence/policy.js';
import { evidenceGate, SUMMARY_EVIDENCE, VERIFICATION_EVIDENCE, withhold, withholdTimelineEntry } from '../../src/domain/evidence/withhold.js';

const DENY_PAYROLL: RetrievalPolicy = {
  defaultEffect: 'allow',
  rules: [{ effect: 'deny', collections: ['payroll'], clients: ['app'], scopes: ['evidence'] }],
};

t.test('the gate decides per collection and client, the evidence scope only', async (t) => {
  const app = evidenceGate(DENY_PAYROLL, { clientId: 'app', level: 'standard' });
  t.match(app({ database: 'erp', collection: 'payroll' }), { allowed: false, reason: 'rule_deny', ruleIndex: 0 });
  t.match(app({ database: 'erp', collection: 'invoices' }), { allowed: true, reason: 'default_allow' });
  const auditor = evidenceGate(DENY_PAYROLL, { clientId: 'auditor', level: 'standard' });
  t.match(auditor({ database: 'erp', collection: 'payroll' }), { allowed: true });
  const payloadOnly = evidenceGate({ defaultEffect: 'allow', rules: [{ effect: 'deny', scopes: ['payload'] }] }, { clientId: 'app', level: 'standard' });
  t.match(payloadOnly({ database: 'erp', collection: 'payroll' }), { allowed: true }, 'a payload rule does not withhold evidence');
  const denyAll = evidenceGate({ defaultEffect: 'deny', rules: [] }, { clientId: 'app', level: 'premium' });
  t.match(denyAll({ database: 'x', collection: 'y' }), { allowed: false, reason: 'default_deny' });
});

t.test('withheld answers lose the hashes, the salt and the proof, and say so', async (t) => {
  const summary = { recordId: 'r', collection: 'payroll', database: 'erp', status: 'Anchored', chainTxHash: '0xabc', payloadHash: 'p', recordHash: 'h', salt: 's', hashScheme: 'dris-v1' };
  const w = withhold(summary, SUMMARY_EVIDENCE);
  t.same(w, { recordId: 'r', collection: 'payroll', database: 'erp', status: 'Anchored', chainTxHash: '0xabc', hashScheme: 'dris-v1', evidenceWithheld: true });
  t.ok('recordHash' in summary, 'the original is not changed');

  const result = { verified: true, recordId: 'r', merkleRoot: 'root', merkleProof: ['a'], leafIndex: 0, treeSize: 1, recordHash: 'h', snapshotHash: 'h', payloadHash: 'p', computedPayloadHash: 'p' };
  const wr: Record<string, unknown> = { ...withhold(result, VERIFICATION_EVIDENCE) };
  for (const m of VERIFICATION_EVIDENCE) t.notOk(m in wr, m);
  t.match(wr, { verified: true, merkleRoot: 'root', computedPayloadHash: 'p', evidenceWithheld: true }, 'the verdict, the batch root and the caller\'s own hash stay');

  const entry = withholdTimelineEntry({ recordId: 'r', recordHash: 'h', leafIndex: 3, treeSize: 8, events: [{ event: 'Accepted', recordHash: 'h' }, { event: 'Anchored', batchSeq: 1 }] });
  t.same(entry, { recordId: 'r', evidenceWithheld: true, events: [{ event: 'Accepted' }, { event: 'Anchored', batchSeq: 1 }] });
});

t.test('policies are cached per tenant; a change made here applies at once', async (t) => {
  let now = 0;
  let reads = 0;
  let stored: StoredPolicy | null = null;
  const store: RetrievalPolicyStore = {
    get: () => {
      reads += 1;
      return Promise.resolve(stored);
    },
    put: (tenantId, policy, updatedBy) => {
      stored = { tenantId, policy, updatedBy, updatedAtMs: now };
      return Promise.resolve(stored);
    },
  };
  const events: AuditEvent[] = [];
  const audit: AuditLog = {
    append: (e) => {
      events.push(...e);
      return Promise.resolve();
    },
    query: () => Promise.resolve({ items: [], nextCursor: null }),
  };
  const access = new EvidenceAccess(store, audit, { refreshMs: 5000, now: () => now });
  const app: Principal = { keyId: 'k1', tenantId: 'acme', clientId: 'app', level: 'standard', tenants: new Set(['acme']) };
  for (let i = 0; i < 10; i++) t.ok((await access.gate(app, 'acme'))({ database: 'erp', collection: 'payroll' }).allowed);
  t.equal(reads, 1, 'ten answers, one read');
  await access.put('acme', DENY_PAYROLL, 'operator');
  t.notOk((await access.gate(app, 'acme'))({ database: 'erp', collection: 'payroll' }).allowed, 'at once after a put here');
  stored = null; // changed elsewhere in the cluster
  t.notOk((await access.gate(app, 'acme'))({ database: 'erp', collection: 'payroll' }).allowed, 'cached until the refresh');
  now += 5000;
  t.ok((await access.gate(app, 'acme'))({ database: 'erp', collection: 'payroll' }).allowed, 'then read again');

  await access.reportWithheld({ principal: app, correlationId: 'c1' }, 'acme', 'records', [], 'policy');
  t.equal(events.length, 0, 'nothing withheld, nothing audited');
  await access.reportWithheld({ principal: app, correlationId: 'c2' }, 'acme', 'records', [{ collection: 'payroll', recordId: 'r1' }, { collection: 'payroll', recordId: 'r2' }], 'policy');
  t.match(events, [{ action: 'evidence.access', outcome: 'denied', tenantId: 'acme', clientId: 'app', keyId: 'k1', correlationId: 'c2', detail: { scope: 'evidence', via: 'records', withheld: 2, records: ['payroll/r1', 'payroll/r2'] } }]);
});

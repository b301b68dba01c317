import { createHash } from 'node:crypto';
import t from 'tap';
import { evidenceKeyHash, evidenceKeyHashes } from '../../src/adapters/clickhouse/evidence-key.js';

/** The look-up key's hash: the first 8 bytes of SHA-256 over `tenant \0 collection \0 record id`, little-endian. */

void t.test('the hash is the first 8 bytes of SHA-256 of the joined key, read little-endian', (t) => {
  const key = { tenantId: 'tenant-1', collection: 'invoices', recordId: 'réf-✓' };
  const digest = createHash('sha256').update(Buffer.from('tenant-1\u0000invoices\u0000réf-✓', 'utf8')).digest();
  let expected = 0n;
  for (let i = 7; i >= 0; i--) expected = (expected << 8n) | BigInt(digest[i] ?? 0);
  t.equal(evidenceKeyHash(key), expected);
  t.ok(expected < 2n ** 64n);
  t.end();
});

void t.test('each part of the key counts, and a key is hashed once however often it is asked for', (t) => {
  const a = { tenantId: 't', collection: 'c', recordId: 'r' };
  const others = [
    { tenantId: 't2', collection: 'c', recordId: 'r' },
    { tenantId: 't', collection: 'c2', recordId: 'r' },
    { tenantId: 't', collection: 'c', recordId: 'r2' },
  ];
  for (const o of others) t.not(evidenceKeyHash(o), evidenceKeyHash(a));
  t.same(evidenceKeyHashes([a, { ...a }, ...others, a]), [a, ...others].map(evidenceKeyHash));
  t.end();
});

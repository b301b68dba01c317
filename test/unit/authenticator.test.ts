import t from 'tap';
import { Authenticator, assertTenant } from '../../src/app/authenticator.js';
import { generateKey } from '../../src/domain/keys/api-key.js';
import type { ApiKeyRecord, KeyStore } from '../../src/domain/keys/types.js';

class MemoryKeys implements KeyStore {
  readonly keys = new Map<string, ApiKeyRecord>();
  lookups = 0;
  putKey(k: ApiKeyRecord): Promise<void> {
    this.keys.set(k.keyId, k);
    return Promise.resolve();
  }
  getKey(id: string): Promise<ApiKeyRecord | null> {
    this.lookups += 1;
    return Promise.resolve(this.keys.get(id) ?? null);
  }
  listKeys(): Promise<ApiKeyRecord[]> {
    return Promise.resolve([...this.keys.values()]);
  }
  countKeys(): Promise<number> {
    return Promise.resolve(this.keys.size);
  }
}

function keyRecord(g: ReturnType<typeof generateKey>, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { keyId: g.keyId, tenantId: 'acme', clientId: 'app', level: 'premium', secretHash: g.secretHash, createdAtMs: 0, expiresAtMs: null, revokedAtMs: null, alsoTenants: ['globex'], rotatedFrom: null, ...over };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code: string }).code;
  }
}

t.test('resolves a principal and caches lookups', async (t) => {
  let now = 1000;
  const store = new MemoryKeys();
  const g = generateKey();
  await store.putKey(keyRecord(g));
  const auth = new Authenticator(store, { refreshMs: 5000, now: () => now });
  const p = await auth.authenticate(g.apiKey);
  t.match(p, { keyId: g.keyId, tenantId: 'acme', clientId: 'app', level: 'premium' });
  t.ok(p.tenants.has('globex'));
  await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(g.apiKey)));
  t.equal(store.lookups, 1, 'one store lookup within the refresh interval');
  // A revocation elsewhere is seen once the cache entry is older than refreshMs.
  await store.putKey(keyRecord(g, { revokedAtMs: 1500 }));
  t.equal(await codeOf(auth.authenticate(g.apiKey)), 'ok');
  now = 7000;
  t.equal(await codeOf(auth.authenticate(g.apiKey)), 'revoked_api_key');
});

t.test('401 codes', async (t) => {
  const store = new MemoryKeys();
  const g = generateKey();
  const expired = generateKey();
  await store.putKey(keyRecord(g));
  await store.putKey(keyRecord(expired, { expiresAtMs: 1 }));
  const auth = new Authenticator(store, { refreshMs: 0, now: () => 10 });
  t.equal(await codeOf(auth.authenticate(undefined)), 'missing_api_key');
  t.equal(await codeOf(auth.authenticate('dris_nope')), 'invalid_api_key');
  t.equal(await codeOf(auth.authenticate(generateKey().apiKey)), 'invalid_api_key', 'unknown key');
  const other = generateKey();
  await store.putKey(keyRecord(other, { secretHash: g.secretHash }));
  t.equal(await codeOf(auth.authenticate(other.apiKey)), 'invalid_api_key', 'wrong secret');
  t.equal(await codeOf(auth.authenticate(expired.apiKey)), 'expired_api_key');
});

t.test('tenancy', async (t) => {
  const p = { keyId: 'k', tenantId: 'acme', clientId: 'c', level: 'standard' as const, tenants: new Set(['acme', 'globex']) };
  t.doesNotThrow(() => assertTenant(p, 'globex'));
  t.throws(() => assertTenant(p, 'initech'), { code: 'forbidden_tenant' });
});

t.test('authenticateNow answers only what authenticate would answer without waiting', async (t) => {
  let now = 1000;
  const store = new MemoryKeys();
  const g = generateKey();
  const other = generateKey();
  await store.putKey(keyRecord(g, { expiresAtMs: 20_000 }));
  const auth = new Authenticator(store, { refreshMs: 5000, now: () => now });
  t.equal(auth.authenticateNow(g.apiKey), undefined, 'never checked: the store must be asked');
  t.equal(auth.authenticateNow(undefined), undefined);
  t.equal(auth.authenticateNow(other.apiKey), undefined);
  const p = await auth.authenticate(g.apiKey);
  t.equal(auth.authenticateNow(g.apiKey), p, 'checked and fresh: the same principal at once');
  t.equal(auth.authenticateNow(`${g.apiKey}x`), undefined, 'another text is not the checked key');
  now = 6000;
  t.equal(auth.authenticateNow(g.apiKey), undefined, 'the cached record is stale');
  t.equal(await auth.authenticate(g.apiKey), p, 'rereading the same record keeps the principal');
  t.equal(auth.authenticateNow(g.apiKey), p);
  await store.putKey(keyRecord(g, { revokedAtMs: 6500, expiresAtMs: 20_000 }));
  now = 12_000;
  t.equal(await codeOf(auth.authenticate(g.apiKey)), 'revoked_api_key');
  t.equal(auth.authenticateNow(g.apiKey), undefined, 'a revoked key is never answered at once');
  const h = generateKey();
  await store.putKey(keyRecord(h, { expiresAtMs: 13_000 }));
  await auth.authenticate(h.apiKey);
  t.ok(auth.authenticateNow(h.apiKey));
  now = 13_000;
  t.equal(auth.authenticateNow(h.apiKey), undefined, 'expired while cached');
  t.equal(await codeOf(auth.authenticate(h.apiKey)), 'expired_api_key');
  now = 12_000;
  auth.invalidate(h.keyId);
  t.equal(auth.authenticateNow(h.apiKey), undefined, 'invalidated');
});

import t from 'tap';
import { generateKey, parseKey, secretMatches, hashSecret } from '../../src/domain/keys/api-key.js';

t.test('generated keys parse back and match their hash', async (t) => {
  for (let i = 0; i < 50; i++) {
    const k = generateKey();
    t.match(k.apiKey, /^dris_[a-z2-7]{16}_[a-z2-7]{59}$/);
    const p = parseKey(k.apiKey);
    t.same(p, { keyId: k.keyId, secret: k.secret });
    t.ok(secretMatches(k.secret, k.secretHash));
    t.equal(k.secretHash, hashSecret(k.secret));
  }
});

t.test('a changed character fails the check', async (t) => {
  const k = generateKey();
  for (const pos of [5, 10, 25, 60, k.apiKey.length - 1]) {
    const c = k.apiKey[pos] === 'a' ? 'b' : 'a';
    t.equal(parseKey(k.apiKey.slice(0, pos) + c + k.apiKey.slice(pos + 1)), null, `position ${pos}`);
  }
  t.equal(parseKey(''), null);
  t.equal(parseKey(k.apiKey.toUpperCase()), null);
  t.equal(parseKey(`${k.apiKey}a`), null);
});

t.test('a wrong secret does not match', async (t) => {
  const a = generateKey();
  const b = generateKey();
  t.notOk(secretMatches(b.secret, a.secretHash));
  t.notOk(secretMatches(a.secret, 'not-hex'));
});

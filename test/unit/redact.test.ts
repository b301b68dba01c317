import t from 'tap';
import { sanitizeText, sanitizeUrl, sanitizeValue } from '../../src/util/redact.js';

const INFURA_KEY = '9aa3d95b3bc440fa88ea12eaa4456161';
const ALCHEMY_KEY = 'Xk2jDh4lq9ZmA7pNbV3cR8sT1uW5yE0o';

t.test('credentials anywhere in a URL are replaced', async (t) => {
  const cases: [string, string][] = [
    ['https://user:s3cret@rpc.example.org:8545/', 'https://***:***@rpc.example.org:8545/'],
    ['nats://token-only@nats.internal:4222', 'nats://***@nats.internal:4222'],
    [`https://mainnet.infura.io/v3/${INFURA_KEY}`, 'https://mainnet.infura.io/v3/***'],
    [`https://eth-mainnet.g.alchemy.com/v2/${ALCHEMY_KEY}`, 'https://eth-mainnet.g.alchemy.com/v2/***'],
    ['https://black-frost.quiknode.pro/0123456789abcdef0123456789abcdef01234567/', 'https://black-frost.quiknode.pro/***/'],
    [`https://rpc.ankr.com/eth/${'ab12'.repeat(16)}`, 'https://rpc.ankr.com/eth/***'],
    ['https://api.example.org/rpc?apikey=plain&chain=1', 'https://api.example.org/rpc?apikey=***&chain=1'],
    ['https://api.example.org/rpc?token=abc&Api-Key=def&access_token=ghi&key=jkl', 'https://api.example.org/rpc?token=***&Api-Key=***&access_token=***&key=***'],
    ['https://api.example.org/rpc#secret-fragment', 'https://api.example.org/rpc#***'],
  ];
  for (const [raw, want] of cases) t.equal(sanitizeUrl(raw), want, raw);
});

t.test('what identifies an endpoint is kept', async (t) => {
  for (const u of ['http://127.0.0.1:8545/', 'http://localhost:5001/api/v0', 'https://rpc.sepolia.org/', 'redis://redis:6379/1', 'https://rpc.example.org/eth/mainnet?chain=1']) {
    t.equal(sanitizeUrl(u), u, u);
  }
  t.equal(sanitizeUrl('127.0.0.1:4222'), '127.0.0.1:4222', 'host:port (a NATS server) is not a URL but harmless');
});

t.test('text that is not a URL but could hold a credential is replaced whole', async (t) => {
  t.equal(sanitizeUrl('user:pass@host'), '***');
  t.equal(sanitizeUrl(`host/v3/${INFURA_KEY}`), '***');
});

t.test('free text: URLs, bearer tokens and assignments', async (t) => {
  const msg = `could not detect network (url=https://mainnet.infura.io/v3/${INFURA_KEY}, code=NETWORK_ERROR) Authorization: Bearer abc.def.ghi password=hunter2; "apiKey":"k-123"`;
  const out = sanitizeText(msg);
  for (const secret of [INFURA_KEY, 'abc.def.ghi', 'hunter2', 'k-123']) t.notOk(out.includes(secret), secret);
  t.match(out, /url=https:\/\/mainnet\.infura\.io\/v3\/\*\*\*/);
  t.match(out, /code=NETWORK_ERROR/, 'the rest of the message stays');
});

t.test('values: members named like credentials, at any depth, bounded', async (t) => {
  const v = sanitizeValue({
    a: { b: { token: 't0ps3cret', password: 'p', ok: 1 } },
    privateKey: '0x' + '11'.repeat(32),
    list: [`see https://x:y@h/`, { Authorization: 'Bearer zz' }],
  }) as Record<string, unknown>;
  const text = JSON.stringify(v);
  for (const secret of ['t0ps3cret', '"p"', '1111', 'x:y', 'zz']) t.notOk(text.includes(secret), secret);
  t.match(v, { a: { b: { ok: 1 } } });
  // A cycle cannot stall a log call.
  const cyclic: Record<string, unknown> = { name: 'c' };
  cyclic['self'] = cyclic;
  t.doesNotThrow(() => sanitizeValue(cyclic));
});

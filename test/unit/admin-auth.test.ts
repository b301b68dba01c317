import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { AdminAuthenticator, bearerToken } from '../../src/app/admin-auth.js';
import { ADMIN_TOKEN_RANDOM_BYTES, resolveAdminToken } from '../../src/app/key-admin.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { createLogger, replaceRootLogger } from '../../src/util/logger.js';
import { httpStatusOf } from '../../src/http/status.js';

const TOKEN = 'a'.repeat(20) + 'B'.repeat(23);

// The authenticator's log lines, captured: they must name the address and never what was sent.
const logLines: string[] = [];
replaceRootLogger(
  createLogger(
    'info',
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        logLines.push(chunk.toString('utf8'));
        cb();
      },
    }),
  ),
);

function outcome(fn: () => void): { code: string; status: number; headers: Record<string, string>; extra: Record<string, unknown> } | 'ok' {
  try {
    fn();
    return 'ok';
  } catch (err) {
    if (!(err instanceof DrisError)) throw err;
    return { code: err.code, status: httpStatusOf(err), headers: { ...err.headers }, extra: { ...err.extra } };
  }
}

t.test('the bearer token is taken from the header, anything else is no token', async (t) => {
  t.equal(bearerToken(`Bearer ${TOKEN}`), TOKEN);
  t.equal(bearerToken(`bearer\t${TOKEN} `), TOKEN);
  t.equal(bearerToken(undefined), '');
  t.equal(bearerToken(`Basic ${TOKEN}`), '');
  t.equal(bearerToken(`Bearer ${TOKEN} extra`), '');
});

t.test('only the exact token passes: prefixes, extensions and other lengths fail alike', async (t) => {
  const auth = new AdminAuthenticator({ token: TOKEN, maxFailures: 100 });
  t.equal(outcome(() => auth.check(`Bearer ${TOKEN}`, '10.0.0.1')), 'ok');
  for (const wrong of [TOKEN.slice(0, -1), TOKEN + 'x', TOKEN.toLowerCase(), 'x', TOKEN.replace('B', 'C')]) {
    t.match(outcome(() => auth.check(`Bearer ${wrong}`, '10.0.0.1')), { code: 'admin_unauthorized', status: 401 }, `${wrong.length} characters`);
  }
  t.match(outcome(() => auth.check(undefined, '10.0.0.1')), { code: 'admin_unauthorized', status: 401 }, 'no header');
});

t.test('failures are throttled per address, then every request of it waits for the window', async (t) => {
  let now = 1_000_000;
  logLines.length = 0;
  const auth = new AdminAuthenticator({ token: TOKEN, maxFailures: 3, windowMs: 60_000, now: () => now });
  for (let i = 0; i < 3; i++) t.match(outcome(() => auth.check('Bearer guess-' + String(i), '10.0.0.2')), { status: 401 });
  const throttled = outcome(() => auth.check('Bearer guess-3', '10.0.0.2'));
  t.match(throttled, { code: 'rate_limit_exceeded', status: 429, headers: { 'Retry-After': '60' }, extra: { status: 429, retryAfter: 60 } });
  t.match(outcome(() => auth.check(`Bearer ${TOKEN}`, '10.0.0.2')), { status: 429 }, 'even the right token, or the budget would not bound guessing');
  t.equal(outcome(() => auth.check(`Bearer ${TOKEN}`, '10.0.0.3')), 'ok', 'another address is not affected');
  now += 30_000;
  t.match(outcome(() => auth.check(`Bearer ${TOKEN}`, '10.0.0.2')), { headers: { 'Retry-After': '30' } });
  now += 30_000;
  t.equal(outcome(() => auth.check(`Bearer ${TOKEN}`, '10.0.0.2')), 'ok', 'the window ended');

  const failed = logLines.filter((l) => l.includes('admin authentication failed'));
  t.equal(failed.length, 3, 'each failure logged once; throttled requests are not logged again');
  t.ok(failed.every((l) => l.includes('10.0.0.2')), 'with the address');
  t.notOk(logLines.join('').includes('guess-'), 'never with what was sent');
  t.notOk(logLines.join('').includes(TOKEN));
  t.match(failed[2], /throttled/);
});

t.test('the addresses tracked are bounded: new ones are refused while all are in use', async (t) => {
  let now = 0;
  const auth = new AdminAuthenticator({ token: TOKEN, maxFailures: 5, maxAddresses: 2, windowMs: 1000, now: () => now });
  t.match(outcome(() => auth.check('Bearer x', 'a')), { status: 401 });
  t.match(outcome(() => auth.check('Bearer x', 'b')), { status: 401 });
  t.match(outcome(() => auth.check('Bearer x', 'c')), { status: 429 });
  t.equal(outcome(() => auth.check(`Bearer ${TOKEN}`, 'c')), 'ok', 'a right token is not a failure to track');
  now = 1000;
  t.match(outcome(() => auth.check('Bearer x', 'c')), { status: 401 }, 'expired entries make room');
});

t.test('the admin token: at least 32 bytes from the environment or the file; generated with 32 random bytes, 0600', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-admin-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.throws(() => resolveAdminToken(dir, 'short', 32), { code: 'config_invalid' });
  t.equal(resolveAdminToken(dir, TOKEN, 32).token, TOKEN);

  const made = resolveAdminToken(dir, undefined, 32);
  t.equal(made.file, path.join(dir, 'admin-token'));
  t.equal(Buffer.from(made.token, 'base64url').length, ADMIN_TOKEN_RANDOM_BYTES);
  t.ok(ADMIN_TOKEN_RANDOM_BYTES >= 32);
  t.equal((await stat(path.join(dir, 'admin-token'))).mode & 0o777, 0o600);
  t.equal(resolveAdminToken(dir, undefined, 32).token, made.token, 'made once, then read');
  t.equal((await readFile(path.join(dir, 'admin-token'), 'utf8')).trim(), made.token);

  await writeFile(path.join(dir, 'admin-token'), 'tooshort\n');
  let err: unknown;
  try {
    resolveAdminToken(dir, undefined, 32);
  } catch (e) {
    err = e;
  }
  t.ok(err instanceof DrisError);
  t.equal((err as DrisError).code, 'config_invalid');
  t.match((err as DrisError).message, path.join(dir, 'admin-token'), 'names the file');
  t.notMatch((err as DrisError).message, /tooshort/, 'never the token');
});

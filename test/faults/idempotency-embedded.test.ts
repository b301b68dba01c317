import t from 'tap';
import { embeddedCrash } from './helpers/crash.js';
import { killLoop } from './helpers/kill-loop.js';

/**
 * Idempotency under faults, embedded default (issue 14): kill -9 under load (16 clients, five
 * SIGKILLs), then the same key in flight at a SIGKILL.
 */

t.test('embedded: kill -9 under load', async (t) => {
  await killLoop(t, { name: 'embedded', env: {}, kills: 5, clients: 16 });
});

t.test('embedded: the same key sent concurrently, SIGKILL within 50 ms, restart, resend', async (t) => {
  await embeddedCrash(t);
});

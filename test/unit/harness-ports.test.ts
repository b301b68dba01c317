import t from 'tap';
import { onFreePort } from '../harness/servers.js';

// The harness starts servers on ports found free; one taken meanwhile is tried again on another.

void t.test('a port taken before the bind is replaced by another', async (t) => {
  const tried: number[] = [];
  const port = await onFreePort(async (p) => {
    tried.push(p);
    if (tried.length < 3) throw new Error(`redis-server exited (1) before ready: bind: Address already in use (${p})`);
    return p;
  });
  t.equal(tried.length, 3);
  t.equal(port, tried[2]);
});

void t.test('other failures are not retried, and the attempts are bounded', async (t) => {
  let calls = 0;
  await t.rejects(
    onFreePort(async () => {
      calls++;
      throw new Error('not ready after 30000 ms');
    }),
    { message: 'not ready after 30000 ms' },
  );
  t.equal(calls, 1);
  calls = 0;
  await t.rejects(
    onFreePort(async () => {
      calls++;
      throw new Error('listen tcp 127.0.0.1:4222: bind: address already in use');
    }, 3),
    { message: /address already in use/ },
  );
  t.equal(calls, 3);
});

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { anvilFloor } from '../../bench/lib/floors/anvil.js';

/**
 * A JSON-RPC endpoint that takes every transaction and mines only the first `mines` of them, at
 * once: the floor must count the rate up to the last one mined, not divide them by its deadline.
 */
async function chainThatStalls(mines: number): Promise<{ url: string; server: Server; sent: () => number }> {
  let sent = 0;
  const read = async (req: IncomingMessage): Promise<{ method: string; params: unknown[] }> => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    return JSON.parse(Buffer.concat(parts).toString('utf8')) as { method: string; params: unknown[] };
  };
  const server = createServer((req, res) => {
    void read(req).then(({ method, params }) => {
      let result: unknown = null;
      if (method === 'eth_sendRawTransaction') {
        sent += 1;
        result = `0x${'00'.repeat(32)}`;
      } else if (method === 'eth_getTransactionCount') {
        result = `0x${(params[1] === 'latest' ? Math.min(sent, mines) : 0).toString(16)}`;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, sent: () => sent };
}

void t.test('transactions that are never mined end the wait, and the rate is of those mined', async (t) => {
  const chain = await chainThatStalls(40);
  t.teardown(() => chain.server.close());
  const started = performance.now();
  const floor = await anvilFloor(0.5, { rpcUrl: chain.url, chainId: 31337 });
  const waitedMs = performance.now() - started;
  t.equal(floor.transactions, 40, 'the mined ones are counted');
  t.equal(floor.sent, chain.sent(), 'of all that were sent');
  t.ok(floor.sent > 40, 'more were sent than mined');
  // Before: 40 transactions over the 30 s deadline, about 1 tx/s.
  t.ok(floor.txPerSec > 20, `a rate over the time they took to mine (${floor.txPerSec} tx/s)`);
  t.ok(waitedMs < 15_000, 'without waiting out the deadline');
});

void t.test('a chain that mines nothing is an error, not a rate of zero', async (t) => {
  const chain = await chainThatStalls(0);
  t.teardown(() => chain.server.close());
  await t.rejects(anvilFloor(0.2, { rpcUrl: chain.url, chainId: 31337 }), /none of \d+ transactions mined/);
});

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { runLoad } from '../../bench/lib/load/generator.js';
import type { LoadSpec } from '../../bench/lib/load/types.js';

/**
 * The load generator against a small node:http server on loopback whose answers stall for a
 * stretch of the run: the open loop must charge the stall to every request that was due during
 * it (coordinated omission corrected), where a closed loop sees one slow request. Bounded: each
 * run lasts under 3 s, 100 requests/s.
 */

interface Stalling {
  readonly server: Server;
  readonly port: number;
  /** Holds every answer from `from` for `ms` milliseconds (epoch ms). */
  stallAt(from: number, ms: number): void;
  received: number;
}

async function stallingServer(handler?: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<Stalling> {
  let until = 0;
  let from = Number.POSITIVE_INFINITY;
  const s: { received: number } = { received: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      s.received++;
      const answer = (): void => {
        if (handler !== undefined) handler(req, res, body);
        else res.writeHead(202, { 'content-type': 'application/json' }).end('{"ok":true}');
      };
      const now = Date.now();
      if (now >= from && now < until) setTimeout(answer, until - now);
      else answer();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(s, {
    server,
    port: (server.address() as AddressInfo).port,
    stallAt(start: number, ms: number) {
      from = start;
      until = start + ms;
    },
  });
}

function spec(port: number, mode: LoadSpec['mode'], durationSec = 2): LoadSpec {
  return {
    host: '127.0.0.1',
    port,
    source: { kind: 'template', method: 'POST', path: '/x', headers: { 'Content-Type': 'application/json' }, template: '{"w":{{W}},"s":{{S}},"r":{{R}}}', randomBelow: 10 },
    mode,
    warmupSec: 0,
    durationSec,
    workers: 1,
    initialConnections: 4,
    maxConnections: 256,
    timeoutMs: 5000,
    check: { statuses: [202] },
  };
}

t.test('open loop: a 600 ms stall is charged to every request due during it', async (t) => {
  const srv = await stallingServer();
  t.teardown(() => srv.server.close());
  const run = runLoad(spec(srv.port, { kind: 'open', ratePerSec: 100 }), { onStart: (t0) => srv.stallAt(t0 + 700, 600) });
  const r = await run;
  t.equal(r.mode, 'open');
  t.equal(r.failed, 0);
  t.ok(r.ok >= 195 && r.ok <= 200, `about 200 answers (${r.ok})`);
  // 60 of 200 requests fall in the stall, waiting 0..600 ms: p90 and above are hundreds of ms.
  t.ok(r.latency.p90 >= 250, `p90 ${r.latency.p90} ms reflects the stall`);
  t.ok(r.latency.max >= 500, `max ${r.latency.max} ms`);
  t.ok(r.latency.p50 < 100, `p50 ${r.latency.p50} ms is the requests outside the stall`);
  t.ok(r.generator.peakInFlight >= 20, `connections were added to hold the rate (peak ${r.generator.peakInFlight} in flight)`);
  t.ok(r.generator.sendLag !== null);
  t.equal(r.series.length, 2, 'one point per measured second');
  t.equal(r.series.reduce((a, s) => a + s.ok, 0) <= r.ok, true);
});

t.test('closed loop: the same stall shows as one slow request per connection (what open loop corrects)', async (t) => {
  const srv = await stallingServer();
  t.teardown(() => srv.server.close());
  const r = await runLoad(spec(srv.port, { kind: 'closed', connections: 1 }), { onStart: (t0) => srv.stallAt(t0 + 700, 600) });
  t.equal(r.mode, 'closed');
  t.ok(r.ok > 200, `back-to-back requests (${r.ok})`);
  t.ok(r.latency.max >= 500, `the stalled request took ${r.latency.max} ms`);
  t.ok(r.latency.p99 < 100, `yet p99 is ${r.latency.p99} ms: the stall hides in one sample`);
});

t.test('statuses, failed checks and chunked answers are counted, never measured as successes', async (t) => {
  let n = 0;
  const srv = await stallingServer((_req, res, body) => {
    n++;
    if (n % 10 === 0) res.writeHead(503).end('busy');
    else if (n % 10 === 1) {
      // Chunked (no Content-Length) and without the expected text.
      res.writeHead(202, { 'content-type': 'application/json' });
      res.write('{"verified":');
      res.end('false}');
    } else res.writeHead(202, { 'content-type': 'application/json' }).end(`{"verified":true,"echo":${body}}`);
  });
  t.teardown(() => srv.server.close());
  const base = spec(srv.port, { kind: 'open', ratePerSec: 100 }, 1);
  const r = await runLoad({ ...base, check: { statuses: [202], bodyIncludes: ['"verified":true'] } });
  const total = Object.values(r.statuses).reduce((a, b) => a + b, 0);
  t.ok(total >= 95, `${total} answers`);
  t.ok((r.statuses['503'] ?? 0) >= 9, `503s counted (${r.statuses['503']})`);
  t.ok((r.errors['check'] ?? 0) >= 9, `failed checks counted (${r.errors['check']})`);
  t.equal(r.non2xx, r.statuses['503']);
  t.equal(r.failed, (r.statuses['503'] ?? 0) + (r.errors['check'] ?? 0));
  t.equal(r.ok + r.failed, total);
  t.equal(r.latency.count, r.ok, 'only successes are in the latency');
});

t.test('a server that is not there: connection errors, no hang', async (t) => {
  const srv = await stallingServer();
  const port = srv.port;
  await new Promise<void>((r) => srv.server.close(() => r()));
  await t.rejects(runLoad(spec(port, { kind: 'closed', connections: 2 }, 1)), /cannot connect/);
});

import net from 'node:net';

/**
 * A TCP relay between NATS clients and a nats-server that can swallow the clients' acks: PUB and
 * HPUB frames to `$JS.ACK.` subjects are read whole and not passed on while `dropping`, so an ack
 * that waits for the server's confirmation times out, as when a server dies with it in flight.
 * Everything else, both ways, passes unchanged.
 */
export interface AckDropper {
  readonly url: string;
  /** Whether acks are swallowed now. */
  dropping: boolean;
  /** Acks swallowed so far. */
  readonly dropped: number;
  close(): Promise<void>;
}

const CRLF = Buffer.from('\r\n');

export async function startAckDropper(natsUrl: string): Promise<AckDropper> {
  const target = new URL(natsUrl);
  const sockets = new Set<net.Socket>();
  const state = { dropping: false, dropped: 0 };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    upstream.pipe(client);
    let pending: Buffer = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let at = 0;
      for (;;) {
        const eol = pending.indexOf(CRLF, at);
        if (eol < 0) break;
        const line = pending.subarray(at, eol).toString('latin1');
        const [op = '', subject = '', ...rest] = line.split(' ');
        const verb = op.toUpperCase();
        // PUB subject [reply] size, HPUB subject [reply] headers total: the frame's bytes follow.
        const body = verb === 'PUB' || verb === 'HPUB' ? Number(rest.at(-1)) + 2 : 0;
        const frameEnd = eol + 2 + body;
        if (frameEnd > pending.length) break;
        if (body > 0 && state.dropping && subject.startsWith('$JS.ACK.')) state.dropped += 1;
        else upstream.write(pending.subarray(at, frameEnd));
        at = frameEnd;
      }
      pending = pending.subarray(at);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `nats://127.0.0.1:${port}`,
    get dropping() {
      return state.dropping;
    },
    set dropping(on: boolean) {
      state.dropping = on;
    },
    get dropped() {
      return state.dropped;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

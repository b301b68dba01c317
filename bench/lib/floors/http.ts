import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLoadBalancer, type LoadBalancer } from '../../../test/harness/haproxy.js';
import { terminate } from '../../../test/harness/servers.js';

/**
 * The HTTP floor: bench/bare-uws.ts, uWebSockets.js reading the body and answering 202 with a body
 * of dris's size and nothing else, on the CPU the service gets. Driven by the same generator with
 * the same load as the service, it is what HTTP alone costs on this machine.
 */

const here = path.dirname(fileURLToPath(import.meta.url));

export interface BareServer {
  readonly host: string;
  readonly port: number;
  stop(): Promise<void>;
}

export async function startBareServer(pinCpu: string | null): Promise<BareServer> {
  const argv = [process.execPath, path.join(here, '..', '..', 'bare-uws.js'), '0'];
  const cmd = pinCpu === null ? argv : ['taskset', '-c', pinCpu, ...argv];
  const child = spawn(cmd[0] as string, cmd.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('bare uWebSockets.js server did not start within 20 s')), 20_000);
    child.stdout?.on('data', (d: Buffer) => {
      const m = /ready (\d+)/.exec(d.toString());
      if (m?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error('bare uWebSockets.js server exited before listening'));
    });
  });
  return { host: '127.0.0.1', port, stop: () => terminate(child, 'SIGTERM', 5000) };
}

/**
 * The HTTP floor of a fleet: `count` bare servers behind HAProxy configured as the fleet's load
 * balancer (the same template: round robin, health checks), so the balancer's own cost is part of
 * the floor. Resolves once HAProxy sees every server UP.
 */
export async function startBareBehindLoadBalancer(count: number, dir: string): Promise<BareServer> {
  const servers: BareServer[] = [];
  let lb: LoadBalancer | null = null;
  const stopAll = async (): Promise<void> => {
    if (lb !== null) await lb.stop();
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    for (let i = 0; i < count; i++) servers.push(await startBareServer(null));
    // The bare server answers every GET (the balancer's /readyz check included) on its one port.
    const backends = servers.map((s, i) => ({ name: `bare-${i + 1}`, port: s.port, opsPort: s.port }));
    lb = await startLoadBalancer({ dir, port: 0, servers: backends });
    await lb.waitUp(undefined, 30_000);
    return { host: '127.0.0.1', port: lb.port, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

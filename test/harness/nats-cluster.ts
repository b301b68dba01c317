import type { ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, natsServerBinary, spawnUntil, terminate } from './servers.js';
import { repoRoot } from './service.js';

/**
 * A NATS JetStream cluster of three nodes on loopback, each with its own store directory, client,
 * route and monitoring ports, from deploy/nats/nats-cluster-node.conf.template (sync_interval
 * always). Nodes can be killed and restarted one by one on the same ports and store: the local
 * fleet and the chaos run use that.
 */

export interface NatsClusterNode {
  readonly name: string;
  readonly clientPort: number;
  readonly monitorPort: number;
  readonly url: string;
  readonly running: boolean;
  readonly pid: number | undefined;
  /** Sends a signal (SIGTERM by default) and waits for the exit; the store is kept. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the node again on the same ports and store (stopping it first when running). */
  restart(): Promise<void>;
}

export interface NatsCluster {
  readonly nodes: readonly NatsClusterNode[];
  /** Every node's client URL, comma-separated (what NATS_URL holds). */
  readonly url: string;
  readonly user: string;
  readonly password: string;
  /** Resolves once every running node knows the JetStream meta leader and every stream's leader. */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Stops every node (SIGTERM); the directories are kept. */
  stop(): Promise<void>;
}

export interface NatsClusterOptions {
  /** Parent of the nodes' directories (`nats-1`, `nats-2`, …), kept. */
  readonly dir: string;
  readonly size?: number;
  readonly user: string;
  readonly password: string;
}

const TEMPLATE = path.join(repoRoot, 'deploy', 'nats', 'nats-cluster-node.conf.template');

/** `{{name}}` placeholders replaced; a placeholder left without a value is an error, not an empty string. */
export function fillTemplate(template: string, values: Readonly<Record<string, string | number>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`template placeholder {{${name}}} has no value`);
    return String(v);
  });
}

interface NodePorts {
  readonly name: string;
  readonly clientPort: number;
  readonly monitorPort: number;
  readonly routePort: number;
  readonly dir: string;
}

interface Jsz {
  meta_cluster?: { leader?: string };
  account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[];
}

/**
 * Whether this node knows the JetStream meta leader and a leader for every stream it holds: after
 * a restart of the whole cluster on kept stores, the streams elect their leaders after the meta
 * group, and a client asking for a stream before then times out.
 */
async function jetStreamLed(monitorPort: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${monitorPort}/jsz?accounts=true&streams=true`, { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as Jsz;
    const meta = body.meta_cluster?.leader;
    if (typeof meta !== 'string' || meta === '') return false;
    const streams = (body.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
    return streams.every((s) => typeof s.cluster?.leader === 'string' && s.cluster.leader !== '');
  } catch {
    return false;
  }
}

export async function startNatsCluster(options: NatsClusterOptions): Promise<NatsCluster> {
  const bin = natsServerBinary();
  const size = options.size ?? 3;
  const template = await readFile(TEMPLATE, 'utf8');
  const ports: NodePorts[] = [];
  for (let i = 1; i <= size; i++) {
    ports.push({ name: `dris-nats-${i}`, clientPort: await freePort(), monitorPort: await freePort(), routePort: await freePort(), dir: path.join(options.dir, `nats-${i}`) });
  }
  const routes = ports.map((p) => `    nats-route://127.0.0.1:${p.routePort}`).join('\n');
  const configs: string[] = [];
  for (const p of ports) {
    await mkdir(p.dir, { recursive: true, mode: 0o700 });
    const file = path.join(p.dir, 'nats-server.conf');
    const text = fillTemplate(template, {
      name: p.name,
      clientPort: p.clientPort,
      monitorPort: p.monitorPort,
      routePort: p.routePort,
      storeDir: path.join(p.dir, 'jetstream'),
      routes,
      user: options.user,
      password: options.password,
    });
    await writeFile(file, text, { mode: 0o600 });
    configs.push(file);
  }

  const nodes = ports.map((p, i) => {
    let child: ChildProcess | null = null;
    const launch = async (): Promise<void> => {
      child = (await spawnUntil(bin, ['-c', configs[i] as string], 'Server is ready', 30_000)).child;
    };
    const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
      const running = child;
      child = null;
      if (running !== null) await terminate(running, signal);
    };
    const node: NatsClusterNode & { launch(): Promise<void> } = {
      name: p.name,
      clientPort: p.clientPort,
      monitorPort: p.monitorPort,
      url: `nats://127.0.0.1:${p.clientPort}`,
      get running() {
        const c = child as ChildProcess | null;
        return c !== null && c.exitCode === null && c.signalCode === null;
      },
      get pid() {
        return (child as ChildProcess | null)?.pid;
      },
      kill,
      async restart() {
        await kill('SIGTERM');
        await launch();
      },
      launch,
    };
    return node;
  });

  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((n) => n.kill('SIGTERM')));
  };
  try {
    // Together: each node waits for its routes to the others.
    await Promise.all(nodes.map((n) => n.launch()));
  } catch (err) {
    await stop();
    throw err;
  }
  const cluster: NatsCluster = {
    nodes,
    url: nodes.map((n) => n.url).join(','),
    user: options.user,
    password: options.password,
    async waitReady(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const led = await Promise.all(nodes.filter((n) => n.running).map((n) => jetStreamLed(n.monitorPort)));
        if (led.length > 0 && led.every((l) => l)) return;
        if (Date.now() > deadline) throw new Error(`the NATS cluster has no JetStream meta or stream leader within ${timeoutMs} ms`);
        await sleep(200);
      }
    },
    stop,
  };
  try {
    await cluster.waitReady();
  } catch (err) {
    await stop();
    throw err;
  }
  return cluster;
}

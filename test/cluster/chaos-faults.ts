import { setTimeout as sleep } from 'node:timers/promises';
import type { Fleet } from '../harness/fleet.js';
import type { Unit } from './chaos-load.js';

/**
 * The faults of the chaos run, one after another while the load runs: SIGKILL of an api process,
 * an indexer, the leading anchorer, one NATS node, Redis and anvil, each restarted on its data.
 * Each fault waits for a share of the load to have been sent; the load in turn is held back until
 * the faults before it have run, so that every fault meets requests in flight.
 */

export interface FaultRecord {
  readonly name: string;
  readonly killedAtMs: number;
  /** From the SIGKILL to the component answering again. */
  readonly downMs: number;
  /** What the fault did beyond the kill (e.g. blocks the chain lost). */
  readonly detail?: string;
}

export interface Fault {
  readonly name: string;
  run(fleet: Fleet): Promise<FaultRecord & { readonly failoverMs?: number }>;
}

/** Kills, waits `downMs`, restarts with `restart`, which resolves once the component serves again. */
async function killAndRestart(name: string, downMs: number, kill: () => Promise<void>, restart: () => Promise<void>): Promise<FaultRecord> {
  const killedAtMs = Date.now();
  await kill();
  await sleep(downMs);
  await restart();
  return { name, killedAtMs, downMs: Date.now() - killedAtMs };
}

async function blockNumber(rpcUrl: string): Promise<number> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
    signal: AbortSignal.timeout(5000),
  });
  return Number.parseInt(((await res.json()) as { result: string }).result, 16);
}

function one<T>(items: readonly T[], what: string): T {
  const found = items[0];
  if (found === undefined) throw new Error(`the fleet has no ${what}`);
  return found;
}

export const FAULTS: readonly Fault[] = [
  {
    name: 'api process',
    run: async (fleet) => {
      const api = one(fleet.byRole('api'), 'api process');
      return killAndRestart(`${api.name} (SIGKILL)`, 2000, () => api.kill('SIGKILL'), async () => {
        await api.start();
        await fleet.lb.waitUp([api.name]);
      });
    },
  },
  {
    name: 'indexer',
    run: async (fleet) => {
      const indexer = one(fleet.byRole('indexer'), 'indexer');
      return killAndRestart(`${indexer.name} (SIGKILL)`, 2000, () => indexer.kill('SIGKILL'), () => indexer.start());
    },
  },
  {
    name: 'leading anchorer',
    run: async (fleet) => {
      const leader = fleet.leader();
      if (leader === null) throw new Error('no anchorer leads (none logged leadership, or several claim it)');
      const killedAtMs = Date.now();
      await leader.kill('SIGKILL');
      // Failover: from the SIGKILL to another anchorer's first term (its LeadershipChanged line).
      const deadline = killedAtMs + 60_000;
      let next: number | undefined;
      while (next === undefined && Date.now() < deadline) {
        next = fleet.leadership.find((e) => e.kind === 'leading' && e.process !== leader.name && e.atMs >= killedAtMs)?.atMs;
        if (next === undefined) await sleep(50);
      }
      if (next === undefined) throw new Error('no other anchorer took the lead within 60 s of the leader\'s SIGKILL');
      await leader.start();
      return { name: `${leader.name}, the leader (SIGKILL)`, killedAtMs, downMs: Date.now() - killedAtMs, failoverMs: next - killedAtMs };
    },
  },
  {
    name: 'NATS node',
    run: async (fleet) => {
      const node = one(fleet.nats.nodes.slice(1), 'second NATS node');
      return killAndRestart(`${node.name} (SIGKILL)`, 3000, () => node.kill('SIGKILL'), async () => {
        await node.restart();
        await fleet.nats.waitReady();
      });
    },
  },
  {
    name: 'Redis',
    run: (fleet) => killAndRestart('redis (SIGKILL)', 2000, () => fleet.redis.kill('SIGKILL'), () => fleet.redis.restart()),
  },
  {
    name: 'anvil',
    run: async (fleet) => {
      // Killed right after an anchor is mined, before anvil's next state dump (every second) can
      // hold it: the block is lost, and with it an anchor the anchorer recorded as done, which
      // reconciliation must send again.
      const rpcUrl = fleet.chain.rpcUrl;
      const start = await blockNumber(rpcUrl);
      let before = start;
      for (const deadline = Date.now() + 60_000; before === start && Date.now() < deadline; ) {
        await sleep(25);
        before = await blockNumber(rpcUrl);
      }
      const done = await killAndRestart('anvil (SIGKILL)', 1000, () => fleet.chain.node.kill('SIGKILL'), () => fleet.chain.node.start());
      const after = await blockNumber(rpcUrl);
      return { ...done, detail: `killed at block ${before}, restarted at block ${after} (${Math.max(0, before - after)} lost)` };
    },
  },
];

export interface Schedule {
  /** The load's gate (see LoadOptions.gate). */
  gate(kind: Unit['kind'], sentShare: number): Promise<void>;
  /** Runs the faults in turn as the load reaches their shares; resolves with what happened. */
  run(progress: { readonly sent: Record<Unit['kind'], number> }): Promise<(FaultRecord & { failoverMs?: number })[]>;
}

/**
 * Fault i runs once both kinds of request have sent `at[i]` of their records; the load may run at
 * most `lead` ahead of the next fault not yet begun.
 */
export function schedule(fleet: Fleet, faults: readonly Fault[], at: readonly number[], lead: number): Schedule {
  let begun = 0;
  const allowed = (): number => (begun >= faults.length ? 1 : (at[begun] ?? 1) + lead);
  return {
    async gate(_kind, sentShare) {
      // Bounded: the faults' own deadlines end a stalled schedule, and then `begun` is final.
      while (sentShare >= allowed() && begun < faults.length) await sleep(50);
    },
    async run(progress) {
      const done: (FaultRecord & { failoverMs?: number })[] = [];
      try {
        for (const [i, fault] of faults.entries()) {
          const share = at[i] ?? 1;
          const deadline = Date.now() + 300_000;
          while (Math.min(progress.sent.single, progress.sent.bulk) < share && Date.now() < deadline) await sleep(50);
          begun = i + 1;
          done.push(await fault.run(fleet));
        }
      } finally {
        // A fault that failed releases the load too: the run ends and reports it.
        begun = faults.length;
      }
      return done;
    },
  };
}

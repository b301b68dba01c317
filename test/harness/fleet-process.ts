import { createWriteStream, type WriteStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startService, type ServiceHandle } from './service.js';

/**
 * One dris process of the local fleet (`dris serve` with DRIS_ROLES): started, SIGKILLed and
 * restarted on the same data directory and ports. Anchorers report their leadership from their
 * log lines, which is how the chaos run finds the leader and times a failover.
 */

export type FleetRole = 'api' | 'indexer' | 'anchorer';

export interface LeadershipEvent {
  readonly process: string;
  readonly kind: 'leading' | 'lost' | 'killed';
  /** When the harness saw it, ms since the epoch. */
  readonly atMs: number;
  readonly epoch?: number;
}

export interface DrisProcess {
  readonly name: string;
  readonly role: FleetRole;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string>>;
  /** The running service; throws while the process is down. */
  readonly handle: ServiceHandle;
  readonly running: boolean;
  /** SIGKILL by default; the process stays down until restart(). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again (after kill) with the same data directory and environment. */
  start(): Promise<void>;
  /** SIGTERM, SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

export interface DrisProcessOptions {
  readonly name: string;
  readonly role: FleetRole;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string>>;
  /** Appends every log line here (the local fleet's logs/<name>.log). */
  readonly logFile?: string;
  readonly onLeadership?: (event: LeadershipEvent) => void;
}

const LEADING = 'leading: starting the accumulator and the anchorer';
const LOST = 'leadership lost: stopping the accumulator and the anchorer';

export function drisProcess(options: DrisProcessOptions): DrisProcess {
  let current: ServiceHandle | null = null;
  let log: WriteStream | null = options.logFile === undefined ? null : createWriteStream(options.logFile, { flags: 'a', mode: 0o600 });
  const onLog = (rec: Readonly<Record<string, unknown>>, atMs: number): void => {
    log?.write(`${JSON.stringify(rec)}\n`);
    if (options.onLeadership === undefined) return;
    const epoch = typeof rec['epoch'] === 'number' ? rec['epoch'] : undefined;
    const base = { process: options.name, atMs, ...(epoch === undefined ? {} : { epoch }) };
    if (rec['msg'] === LEADING) options.onLeadership({ ...base, kind: 'leading' });
    else if (rec['msg'] === LOST) options.onLeadership({ ...base, kind: 'lost' });
  };
  const killed = (): void => options.onLeadership?.({ process: options.name, kind: 'killed', atMs: Date.now() });
  return {
    name: options.name,
    role: options.role,
    dataDir: options.dataDir,
    env: options.env,
    get handle(): ServiceHandle {
      if (current === null) throw new Error(`${options.name} is not running`);
      return current;
    },
    get running() {
      return current !== null;
    },
    async start() {
      if (current !== null) return;
      log ??= options.logFile === undefined ? null : createWriteStream(options.logFile, { flags: 'a', mode: 0o600 });
      current = await startService({ env: options.env, dataDir: options.dataDir, onLog });
    },
    async kill(signal = 'SIGKILL') {
      const h = current;
      if (h === null) return;
      current = null;
      await h.kill(signal);
      killed();
    },
    async stop(graceMs = 20_000) {
      const h = current;
      if (h !== null) {
        current = null;
        void h.kill('SIGTERM');
        const exited = await Promise.race([h.exited.then(() => true), sleep(graceMs).then(() => false)]);
        if (!exited) await h.kill('SIGKILL');
        killed();
      }
      const closing = log;
      log = null;
      if (closing !== null) await new Promise<void>((resolve) => closing.end(resolve));
    },
  };
}

import { setTimeout as sleep } from 'node:timers/promises';
import { toDrisError } from '../errors/dris-error.js';
import type { LeaderElector, Leadership } from '../domain/pipeline/ports.js';
import { componentLogger } from '../util/logger.js';

/**
 * Runs a role only while this process leads: campaigns, starts the role when a term begins, stops
 * it when the term ends, and campaigns again. Only the leader accumulates and anchors; a process
 * that lost its term stops anchoring, and an anchor it had already sent is refused by the
 * contract's sequence check if the new leader used that sequence first.
 */

export interface LeaderTask {
  start(term: Leadership): Promise<void>;
  stop(): Promise<void>;
}

export interface LeaderLoopOptions {
  /** Between two campaign attempts while another process leads (or the store is down). */
  readonly retryMs: number;
}

export class LeaderLoop {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly stopping = new AbortController();
  private leading = false;
  private readonly log = componentLogger('leader');

  constructor(
    private readonly elector: LeaderElector,
    private readonly task: LeaderTask,
    private readonly options: LeaderLoopOptions,
  ) {}

  /** Whether the role runs here now. */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Makes one attempt at once (the embedded elector always wins it, so the role is running when
   * this resolves, as before there was an election), then keeps campaigning in the background.
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const first = await this.attempt();
    this.loop = this.run(first);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await this.loop;
    if (this.leading) await this.endTerm();
    await this.elector.resign();
  }

  private async attempt(): Promise<Leadership | null> {
    try {
      const term = await this.elector.tryAcquire();
      if (term === null) return null;
      this.log.info({ epoch: term.epoch }, 'leading: starting the accumulator and the anchorer');
      this.leading = true;
      try {
        await this.task.start(term);
      } catch (err) {
        this.log.error({ err, epoch: term.epoch }, 'the role could not start; giving the term up');
        await this.endTerm();
        await this.elector.resign();
        return null;
      }
      return term;
    } catch (err) {
      this.log.warn({ code: toDrisError(err).code }, 'campaign attempt failed');
      return null;
    }
  }

  private async run(first: Leadership | null): Promise<void> {
    let term = first;
    while (this.running) {
      if (term !== null) {
        await waitAborted(term.lost, this.stopping.signal);
        if (!this.running) return;
        this.log.warn({ epoch: term.epoch }, 'leadership lost: stopping the accumulator and the anchorer');
        await this.endTerm();
        term = null;
      }
      try {
        await sleep(this.options.retryMs, undefined, { signal: this.stopping.signal });
      } catch {
        return; // stopping
      }
      term = await this.attempt();
    }
  }

  private async endTerm(): Promise<void> {
    this.leading = false;
    try {
      await this.task.stop();
    } catch (err) {
      this.log.error({ err }, 'the role did not stop cleanly');
    }
  }
}

/** Resolves when either signal aborts. */
function waitAborted(a: AbortSignal, b: AbortSignal): Promise<void> {
  if (a.aborted || b.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      a.removeEventListener('abort', done);
      b.removeEventListener('abort', done);
      resolve();
    };
    a.addEventListener('abort', done, { once: true });
    b.addEventListener('abort', done, { once: true });
  });
}

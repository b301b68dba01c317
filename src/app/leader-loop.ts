import { setTimeout as sleep } from 'node:timers/promises';
import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { LeaderElector, Leadership, PipelineStore } from '../domain/pipeline/ports.js';
import { componentLogger, type Logger } from '../util/logger.js';
import type { EventPublisher } from './events.js';
import { reportingOf, type UseCaseDeps } from './use-case-deps.js';

/**
 * Runs a role only while this process leads: campaigns, starts the role when a term begins, stops
 * it when the term ends, and campaigns again. Only the leader accumulates and anchors; a process
 * that lost its term stops anchoring, and an anchor it had already sent is refused by the
 * contract's sequence check if the new leader used that sequence first. Every term begun or ended
 * is published (LeadershipChanged, with its epoch).
 */

export interface LeaderTask {
  start(term: Leadership): Promise<void>;
  stop(): Promise<void>;
}

export interface LeaderLoopOptions {
  /** Between two campaign attempts while another process leads (or the store is down). */
  readonly retryMs: number;
}

export type LeaderLoopDeps = UseCaseDeps;

export class LeaderLoop {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly stopping = new AbortController();
  /** The epoch of the term this process holds, or null. */
  private term: number | null = null;
  private readonly log: Logger;
  private readonly events: EventPublisher;

  constructor(
    private readonly elector: LeaderElector,
    private readonly task: LeaderTask,
    private readonly options: LeaderLoopOptions,
    deps: LeaderLoopDeps = {},
  ) {
    ({ events: this.events, log: this.log } = reportingOf(deps, 'leader'));
  }

  /** Whether the role runs here now. */
  get isLeader(): boolean {
    return this.term !== null;
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
    if (this.term !== null) await this.endTerm();
    await this.elector.resign();
  }

  private async attempt(): Promise<Leadership | null> {
    try {
      const term = await this.elector.tryAcquire();
      if (term === null) return null;
      this.log.info({ epoch: term.epoch }, 'leading: starting the accumulator and the anchorer');
      this.term = term.epoch;
      this.events.publish({ type: 'LeadershipChanged', leading: true, epoch: term.epoch });
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
    const epoch = this.term ?? 0;
    this.term = null;
    this.events.publish({ type: 'LeadershipChanged', leading: false, epoch });
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

/**
 * The pipeline store of a term: its writes fenced by the term's epoch (PipelineStore.fenced).
 *
 * An epoch below the highest stored means either that this term is already over and a successor
 * wrote, or that the election lost its counter (Redis without persistence, a change of election
 * store). After `confirmMs` (a lease) with the term still held, no successor can exist, and the
 * term writes with the store's epoch + 1 so that its rows are not hidden behind older ones; a term
 * lost meanwhile is refused. `confirmMs` 0: no other leader can exist (the embedded elector).
 */
export async function fenceTerm(
  store: PipelineStore,
  term: Leadership,
  confirmMs: number,
  log: Logger = componentLogger('leader'),
): Promise<{ readonly epoch: number; readonly store: PipelineStore }> {
  const stored = await store.highestEpoch();
  if (term.epoch >= stored) return { epoch: term.epoch, store: store.fenced(term.epoch) };
  log.warn({ epoch: term.epoch, stored, confirmMs }, 'the term epoch is below the pipeline store\'s: waiting out a lease before writing above it');
  if (confirmMs > 0) {
    try {
      await sleep(confirmMs, undefined, { signal: term.lost });
    } catch {
      // aborted: the term was lost
    }
  }
  if (term.lost.aborted) throw new DrisError('invalid_state', 'the term ended before its epoch could be confirmed', { extra: { epoch: term.epoch, stored } });
  const epoch = stored + 1;
  log.warn({ epoch: term.epoch, writesWith: epoch }, 'the election epoch went backwards; this term writes with the epoch after the stored one');
  return { epoch, store: store.fenced(epoch) };
}

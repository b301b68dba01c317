import type { LeaderElector, Leadership } from '../../domain/pipeline/ports.js';

/**
 * The embedded default: one process owns the data directory (its lock keeps others out), so it is
 * always the leader, in one term that lasts until it resigns.
 */
export class EmbeddedElector implements LeaderElector {
  private term: { readonly leadership: Leadership; readonly controller: AbortController } | null = null;
  private epoch = 0;

  tryAcquire(): Promise<Leadership | null> {
    if (this.term === null) {
      const controller = new AbortController();
      this.epoch += 1;
      this.term = { leadership: { epoch: this.epoch, lost: controller.signal }, controller };
    }
    return Promise.resolve(this.term.leadership);
  }

  resign(): Promise<void> {
    this.term?.controller.abort();
    this.term = null;
    return Promise.resolve();
  }

  check(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return this.resign();
  }
}

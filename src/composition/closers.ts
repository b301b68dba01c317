import type { Logger } from '../util/logger.js';

type Close = () => Promise<void> | void;
/** A first step of a graceful stop; `deadlineAtMs` (Date.now() time) bounds how long it may wait. */
type Drain = (deadlineAtMs: number) => Promise<void> | void;

/**
 * What the composition root opened, closed in reverse order: a failure to close one thing is
 * logged and the rest are still closed. A graceful stop first runs the drains, in the order they
 * were added (the HTTP listeners stop accepting and answer what is in flight), then closes.
 */
export class Closers {
  readonly #stack: Close[] = [];
  readonly #drains: Drain[] = [];

  constructor(private readonly log: Logger) {}

  add(close: Close): void {
    this.#stack.push(close);
  }

  addDrain(drain: Drain): void {
    this.#drains.push(drain);
  }

  /** `drainDeadlineAtMs`: when the drains stop waiting (a start that failed drains nothing). */
  async closeAll(drainDeadlineAtMs: number = Date.now()): Promise<void> {
    for (const drain of this.#drains.splice(0)) {
      try {
        await drain(drainDeadlineAtMs);
      } catch (err) {
        this.log.warn({ err }, 'error while draining');
      }
    }
    for (const close of this.#stack.reverse()) {
      try {
        await close();
      } catch (err) {
        this.log.warn({ err }, 'error while closing');
      }
    }
    this.#stack.length = 0;
  }
}

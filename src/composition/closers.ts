import type { Logger } from '../util/logger.js';

type Close = () => Promise<void> | void;

/**
 * What the composition root opened, closed in reverse order: a failure to close one thing is
 * logged and the rest are still closed.
 */
export class Closers {
  readonly #stack: Close[] = [];

  constructor(private readonly log: Logger) {}

  add(close: Close): void {
    this.#stack.push(close);
  }

  async closeAll(): Promise<void> {
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

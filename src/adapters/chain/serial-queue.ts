import { DrisError } from '../../errors/dris-error.js';

/** A serial executor with a bounded backlog. */
export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private size = 0;

  constructor(private readonly max: number) {}

  run<T>(task: () => Promise<T>): Promise<T> {
    if (this.size > this.max) {
      return Promise.reject(new DrisError('overloaded', 'too many anchors are waiting for the chain', { extra: { queued: this.size } }));
    }
    this.size++;
    const result = this.tail.then(task);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    ).finally(() => {
      this.size--;
    });
    return result;
  }

  /** Resolves once everything queued so far has settled. */
  idle(): Promise<void> {
    return this.tail;
  }
}


import { componentLogger, type Logger } from '../util/logger.js';
import type { DomainEvent, EventOf, EventPublisher, EventSource, EventSubscription, EventType, SubscribeOptions, SubscriberStats } from './events.js';

/**
 * In-process delivery of domain events (events.ts). Publishing puts a reference to the event in
 * the bounded queue of each subscriber of its type and returns: no await, no subscriber code, and
 * with no subscriber of the type, one map read. Each subscriber's queue is drained after the
 * publisher's turn (setImmediate, so I/O waiting meanwhile goes first), in publication order,
 * one event at a time; a full queue drops the new event and counts it.
 */

export interface EventBusOptions {
  /** Handler failures are logged here. */
  readonly logger?: Logger;
  /** Default capacity of a subscriber's queue. */
  readonly capacity?: number;
}

const DEFAULT_CAPACITY = 1024;

/** Handler failures logged per subscriber: the first, then one in this many. */
const LOG_FAILURE_EVERY = 1000;

type Handler = (event: DomainEvent) => void | Promise<void>;

/** Events lost just before the event with sequence `at` (or at the end of the queue). */
interface Gap {
  readonly at: number;
  count: number;
}

class Subscriber implements EventSubscription {
  readonly #ring: (DomainEvent | undefined)[];
  #head = 0;
  #size = 0;
  /** Sequence of the next event queued, and of the next delivered: they index the gaps. */
  #queued = 0;
  #taken = 0;
  readonly #gaps: Gap[] = [];
  #scheduled = false;
  #busy = false;
  #closed = false;
  #delivered = 0;
  #dropped = 0;
  #failed = 0;
  #idle: (() => void)[] = [];

  constructor(
    readonly name: string,
    readonly types: readonly EventType[],
    capacity: number,
    private readonly handler: Handler,
    private readonly onLoss: ((dropped: number) => void) | undefined,
    private readonly log: Logger,
    private readonly detach: (s: Subscriber) => void,
  ) {
    this.#ring = new Array<DomainEvent | undefined>(Math.max(1, capacity));
  }

  offer(event: DomainEvent): void {
    if (this.#closed) return;
    const capacity = this.#ring.length;
    if (this.#size === capacity) {
      this.#dropped += 1;
      if (this.onLoss !== undefined) {
        const last = this.#gaps.at(-1);
        if (last !== undefined && last.at === this.#queued) last.count += 1;
        else this.#gaps.push({ at: this.#queued, count: 1 });
      }
      return;
    }
    this.#ring[(this.#head + this.#size) % capacity] = event;
    this.#size += 1;
    this.#queued += 1;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#busy) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#drain();
    });
  }

  /** Delivers what is queued, at most a queue's worth per turn; stops at a handler's promise. */
  #drain(): void {
    let budget = this.#ring.length;
    while (!this.#closed && this.#size > 0 && budget > 0) {
      budget -= 1;
      this.#reportGaps(this.#taken);
      const event = this.#shift();
      let result: void | Promise<void>;
      try {
        result = this.handler(event);
      } catch (err) {
        this.#handlerFailed(err);
        continue;
      }
      if (result !== undefined && typeof (result as { then?: unknown }).then === 'function') {
        this.#busy = true;
        (result as Promise<void>).then(
          () => this.#resume(true),
          (err: unknown) => {
            this.#handlerFailed(err);
            this.#resume(false);
          },
        );
        return;
      }
      this.#delivered += 1;
    }
    if (this.#closed) return;
    if (this.#size > 0) {
      this.#schedule();
      return;
    }
    this.#reportGaps(this.#queued);
    this.#settleIdle();
  }

  #resume(delivered: boolean): void {
    this.#busy = false;
    if (delivered) this.#delivered += 1;
    this.#drain();
  }

  #shift(): DomainEvent {
    const event = this.#ring[this.#head] as DomainEvent;
    this.#ring[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#ring.length;
    this.#size -= 1;
    this.#taken += 1;
    return event;
  }

  /** Tells the subscriber of the events lost before the event of sequence `before`. */
  #reportGaps(before: number): void {
    const onLoss = this.onLoss;
    if (onLoss === undefined) return;
    while (this.#gaps.length > 0 && (this.#gaps[0] as Gap).at <= before) {
      const gap = this.#gaps.shift() as Gap;
      try {
        onLoss(gap.count);
      } catch (err) {
        this.#handlerFailed(err);
      }
    }
  }

  #handlerFailed(err: unknown): void {
    this.#failed += 1;
    if (this.#failed % LOG_FAILURE_EVERY === 1) this.log.error({ err, subscriber: this.name, failed: this.#failed }, 'an event subscriber failed; its next events are delivered');
  }

  #settleIdle(): void {
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  /** Resolves once nothing is queued nor being handled. */
  idle(): Promise<void> {
    if (this.#closed || (this.#size === 0 && !this.#busy && this.#gaps.length === 0)) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  stats(): SubscriberStats {
    return { name: this.name, delivered: this.#delivered, dropped: this.#dropped, failed: this.#failed, queued: this.#size };
  }

  unsubscribe(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ring.fill(undefined);
    this.#size = 0;
    this.#gaps.length = 0;
    this.detach(this);
    this.#settleIdle();
  }
}

export class EventBus implements EventPublisher, EventSource {
  /** Subscribers by event type; a type nobody listens to has no entry. */
  readonly #byType = new Map<EventType, Subscriber[]>();
  readonly #all = new Set<Subscriber>();
  readonly #log: Logger;
  readonly #capacity: number;

  constructor(options: EventBusOptions = {}) {
    this.#log = options.logger ?? componentLogger('events');
    this.#capacity = options.capacity ?? DEFAULT_CAPACITY;
  }

  publish(event: DomainEvent): void {
    const subscribers = this.#byType.get(event.type);
    if (subscribers === undefined) return;
    for (const s of subscribers) s.offer(event);
  }

  wants(type: EventType): boolean {
    return this.#byType.has(type);
  }

  subscribe<T extends EventType>(options: SubscribeOptions<T>, handler: (event: EventOf<T>) => void | Promise<void>): EventSubscription {
    const s = new Subscriber(options.name, [...new Set(options.types)], options.capacity ?? this.#capacity, handler as Handler, options.onLoss, this.#log, (x) => this.#detach(x));
    this.#all.add(s);
    for (const type of s.types) {
      // A new array: a publish iterating the old one is not disturbed.
      this.#byType.set(type, [...(this.#byType.get(type) ?? []), s]);
    }
    return s;
  }

  #detach(s: Subscriber): void {
    this.#all.delete(s);
    for (const type of s.types) {
      const rest = (this.#byType.get(type) ?? []).filter((x) => x !== s);
      if (rest.length === 0) this.#byType.delete(type);
      else this.#byType.set(type, rest);
    }
  }

  /** Every subscriber's counts. */
  stats(): SubscriberStats[] {
    return [...this.#all].map((s) => s.stats());
  }

  /**
   * Resolves true once every subscriber has handled what was published before the call (and what
   * that published in turn), false at the deadline.
   */
  async idle(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      // A handler may publish to another subscriber: settle until a pass finds every queue empty.
      while (Date.now() < deadline) {
        const pending = [...this.#all].map((s) => s.idle());
        const settled = await Promise.race([Promise.all(pending).then(() => true), expired]);
        if (!settled) return false;
        if (this.stats().every((s) => s.queued === 0)) return true;
      }
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops every delivery (at shutdown, after the publishers stopped). */
  close(): void {
    for (const s of [...this.#all]) s.unsubscribe();
  }
}

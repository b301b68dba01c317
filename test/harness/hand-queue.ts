import type { ConsumeOptions, Delivery, PublishResult, RecordQueue, Subscription } from '../../src/domain/records/ports.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';

/** A queue whose deliveries the test hands to the consumer itself. */
export class HandQueue implements RecordQueue {
  private handler: ((deliveries: readonly Delivery[]) => Promise<void>) | null = null;
  /** What the consumer asked for. */
  options: ConsumeOptions | null = null;
  readonly maxMessageBytes = 1024 * 1024;
  publish(): Promise<PublishResult> {
    return Promise.resolve({ duplicate: false });
  }
  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription {
    this.options = options;
    this.handler = handler;
    return { stop: () => Promise.resolve() };
  }
  deliver(deliveries: Delivery[]): Promise<void> {
    if (this.handler === null) throw new Error('not consuming');
    return this.handler(deliveries);
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** A first delivery of one record, at `seq`, whose settling does nothing. */
export function delivery(seq: number, r: AcceptedRecord): Delivery {
  return {
    records: [r],
    seq,
    deliveryCount: 1,
    ack: () => Promise.resolve(),
    nak: () => undefined,
    deadLetter: () => Promise.resolve(),
  };
}

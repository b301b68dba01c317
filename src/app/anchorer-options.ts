import type { Logger } from '../util/logger.js';
import type { ReconcileOptions } from './anchor-reconciler.js';
import type { EventPublisher, EventSource } from './events.js';

/** The anchorer's settings and collaborators (anchorer.ts). */

export interface AnchorerOptions {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Poll interval when no batch is waiting, milliseconds. */
  readonly idleMs: number;
  /** A reconciliation runs at least this often, milliseconds (Failed anchors mined late are found then). */
  readonly reconcileIntervalMs?: number;
  readonly reconcile?: ReconcileOptions;
  /**
   * How long an Anchored write waits for more batches to record with it, milliseconds (default 0):
   * each write is an insert per table, a part each for the engine to merge.
   */
  readonly markGroupWaitMs?: number;
}

/** Batches after the current one whose manifests are pinned while it is anchored. */
export const PIN_AHEAD = 8;

/** BatchFormed events held for the loop: each names up to 8 batches; more lost means a read of the store. */
export const FEED_CAPACITY = 256;

export interface AnchorerDeps {
  /** Publishes what anchoring does; with `subscribe`, also feeds the loop (BatchFormed). */
  readonly events?: EventPublisher & Partial<EventSource>;
  readonly logger?: Logger;
}

export const DEFAULT_ANCHORER_OPTIONS: AnchorerOptions = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 1000, reconcileIntervalMs: 300_000 };

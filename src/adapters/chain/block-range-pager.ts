import type { Log } from 'ethers';

/**
 * eth_getLogs over a long block range, a page at a time. Providers cap what one call may cover
 * (Alchemy 2 000 blocks on some plans, Infura 10 000 results, many public nodes 5 000 or 10 000
 * blocks) and refuse a wider call with an error, not a partial answer: a refused page is split in
 * two and tried again, and the smaller size is kept for the pages after it.
 */

/** Blocks per eth_getLogs call unless configured: the most common provider cap. */
export const DEFAULT_LOG_BLOCK_RANGE = 10_000;

/** Words providers use when they refuse a log query for its size. */
const RANGE_REFUSAL = /block range|range (is )?too (large|wide|big)|range exceed|exceed(s|ed)? .*(range|limit|results)|more than \d+ (results|logs|blocks)|too many (results|logs|blocks)|response size|limit exceeded|max(imum)? (block )?range/i;
/** A rate limit reads much like a size limit; a smaller page does not help it. */
const RATE_LIMIT = /rate.?limit|too many requests|throttl/i;

/** JSON-RPC error codes of a refusal for size: -32005 (limit exceeded), -32602 with a range message. */
const RANGE_CODES = new Set([-32005]);

/** Whether a failed log query was refused for the span or size it asked for (the error as the provider or ethers threw it). */
export function isRangeRefusal(err: unknown): boolean {
  let current: unknown = err;
  // ethers nests the JSON-RPC error (`error`, `info.error`), Node the socket one (`cause`); bounded walk.
  for (let depth = 0; depth < 6 && current !== null && typeof current === 'object'; depth++) {
    const e = current as { code?: unknown; message?: unknown; error?: unknown; info?: { error?: unknown }; cause?: unknown; shortMessage?: unknown };
    if (typeof e.code === 'number' && RANGE_CODES.has(e.code)) return true;
    for (const text of [e.message, e.shortMessage]) {
      if (typeof text !== 'string') continue;
      if (RATE_LIMIT.test(text)) return false;
      if (RANGE_REFUSAL.test(text)) return true;
    }
    current = e.error ?? e.info?.error ?? e.cause;
  }
  return false;
}

export type LogPageFetch = (fromBlock: number, toBlock: number) => Promise<Log[]>;
/** Sees one page's logs; true ends the scan. */
export type LogPageVisit = (logs: readonly Log[], fromBlock: number, toBlock: number) => boolean;

export class BlockRangePager {
  private span: number;

  constructor(maxBlocks: number = DEFAULT_LOG_BLOCK_RANGE) {
    this.span = Math.max(1, Math.trunc(maxBlocks));
  }

  /** Blocks per call now (smaller than configured once a provider refused a page). */
  get blocks(): number {
    return this.span;
  }

  /**
   * Reads [fromBlock, toBlock] a page at a time, oldest or newest page first, until `visit` says
   * done (true) or the range is covered (false). A page refused for its size is split; any other
   * failure, or a refusal of a single block, is thrown as the provider threw it.
   */
  async scan(fromBlock: number, toBlock: number, order: 'oldest' | 'newest', fetch: LogPageFetch, visit: LogPageVisit): Promise<boolean> {
    if (toBlock < fromBlock) return false;
    let low = fromBlock;
    let high = toBlock;
    while (low <= high) {
      const from = order === 'oldest' ? low : Math.max(low, high - this.span + 1);
      const to = order === 'oldest' ? Math.min(high, low + this.span - 1) : high;
      let logs: Log[];
      try {
        logs = await fetch(from, to);
      } catch (err) {
        if (to > from && isRangeRefusal(err)) {
          this.span = Math.max(1, Math.floor((to - from + 1) / 2));
          continue;
        }
        throw err;
      }
      if (visit(logs, from, to)) return true;
      if (order === 'oldest') low = to + 1;
      else high = from - 1;
    }
    return false;
  }
}

import { request } from '../../test/harness/service.js';
import { newHistogram, recordUs, summarize, encodeHistogram, type Histogram } from './histogram.js';
import type { SeriesPoint } from './load/generator.js';
import type { LatencySet } from './results.js';

/**
 * Follows records from acceptance to Anchored through the snapshot listing, as a client would:
 * each poll reads the Anchored snapshots past a cursor (now and then the whole listing, in case
 * one was anchored out of order: every 50th poll while the load runs, every 10th once it is over
 * and records are still awaited) and every record of a snapshot seen for the first time is
 * Anchored at that poll's start. A record's latency runs from its request's intended send time
 * (so a held-back request is charged) to that poll; the poll interval bounds the resolution.
 *
 * Record ids are `<prefix><worker>-<seq>-<k>`: the request (worker, seq) is what the load
 * generator reports with its intended send time.
 */

const PAGE = 20;
/**
 * Polls between two reads of the whole listing while the load runs. A whole read costs the service
 * a query per page of its history, and on a small machine that competes with the pipeline being
 * measured; out of order anchors are rare (a retried batch), and one is still seen within 50 polls.
 */
const FULL_EVERY_UNDER_LOAD = 50;
/** Once the load is over: records still awaited may be in a snapshot anchored out of order. */
const FULL_EVERY_SETTLING = 10;
/** Refusals (429, 503) of the listing in a row for this long end the run: the service is not coming back. */
const REFUSED_FOR_MS = 60_000;

/** The listing answered 429 or 503: the poll is tried again, as a client honouring Retry-After would. */
class ListingRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly retryAfterMs: number,
  ) {
    super(`snapshot listing answered ${status} (${code})`);
  }
}

/** The error code of an answer's body, or what its text starts with (a proxy's page). */
function answerCode(text: string): string {
  try {
    const code = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof code === 'string') return code;
  } catch {
    // not JSON: a load balancer's own answer
  }
  return text.slice(0, 80).replace(/\s+/g, ' ');
}

interface SnapshotItem {
  snapshotId: string;
  recordIds: string[];
}

export interface FollowResult {
  readonly anchored: number;
  /** Listing polls refused as overloaded or unavailable (429, 503) and tried again at the next poll. */
  readonly listingRefusals: number;
  /** The last refusal's status and error code, null when none. */
  readonly lastRefusal: string | null;
  readonly lastAnchoredEpochMs: number;
  readonly latency: LatencySet;
  readonly histogram: Histogram;
}

export class AnchoredFollower {
  readonly #requests = new Map<string, number>();
  /** Records seen Anchored before their request's send time was known: [request, seenAt]. */
  #unmatched: [string, number][] = [];
  readonly #seen = new Set<string>();
  readonly #hist = newHistogram();
  readonly #seconds = new Map<number, Histogram>();
  #anchored = 0;
  #last = 0;
  #expected: number | null = null;
  #stopped = false;
  #refusals = 0;
  #lastRefusal: string | null = null;
  #refusedSince: number | null = null;

  constructor(
    /** The service, or the load balancer in front of several (any api process answers the listing). */
    private readonly svc: { readonly url: string },
    private readonly key: string,
    private readonly o: { readonly prefix: string; readonly pollMs: number },
  ) {}

  #from = 0;
  #to = 0;

  /** The measured window (epoch ms): records whose request was due in it count in the latency. */
  window(fromEpochMs: number, toEpochMs: number): void {
    this.#from = fromEpochMs;
    this.#to = toEpochMs;
  }

  /** A request the service accepted, with the epoch ms at which it was due. */
  addRequest(worker: number, seq: number, intendedEpochMs: number): void {
    this.#requests.set(`${worker}-${seq}`, intendedEpochMs);
  }

  /** All records that will be anchored (known once the load and its top-up are over). */
  expect(records: number): void {
    this.#expected = records;
  }

  stop(): void {
    this.#stopped = true;
  }

  get anchored(): number {
    return this.#anchored;
  }

  #record(req: string, seenAt: number): boolean {
    const intended = this.#requests.get(req);
    if (intended === undefined) return false;
    if (intended >= this.#from && intended < this.#to) {
      const us = (seenAt - intended) * 1000;
      recordUs(this.#hist, us);
      const sec = Math.floor((seenAt - this.#from) / 1000);
      let h = this.#seconds.get(sec);
      if (h === undefined) {
        h = newHistogram();
        this.#seconds.set(sec, h);
      }
      recordUs(h, us);
    }
    return true;
  }

  #take(item: SnapshotItem, seenAt: number): void {
    if (this.#seen.has(item.snapshotId)) return;
    this.#seen.add(item.snapshotId);
    for (const id of item.recordIds) {
      if (!id.startsWith(this.o.prefix)) continue;
      this.#anchored++;
      this.#last = seenAt;
      const parts = id.slice(this.o.prefix.length).split('-');
      const req = `${parts[0]}-${parts[1]}`;
      if (parts.length === 3 && !this.#record(req, seenAt)) this.#unmatched.push([req, seenAt]);
    }
  }

  async #poll(after: string | null, full: boolean): Promise<string | null> {
    let cursor: string | null = full ? null : after;
    let keep = after;
    for (;;) {
      const q = `status=Anchored&limit=${PAGE}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const r = await request<{ items: SnapshotItem[]; nextCursor: string | null }>(this.svc, 'GET', `/api/v1/snapshots?${q}`, { key: this.key });
      if (r.status === 429 || r.status === 503) {
        const retryAfter = Number(r.headers.get('retry-after') ?? '');
        throw new ListingRefused(r.status, answerCode(r.text), Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 0);
      }
      if (r.status !== 200) throw new Error(`snapshot listing answered ${r.status} (${answerCode(r.text)})`);
      // When this page answered: its records were Anchored by then. Not when the poll began: a
      // poll through a long history takes seconds, and records anchored meanwhile would be seen
      // before they were even sent.
      const seenAt = Date.now();
      for (const s of r.body.items) this.#take(s, seenAt);
      if (r.body.nextCursor === null) {
        // The cursor is opaque: keep the one that led to the last page read.
        if (r.body.items.length > 0 && !full) keep = cursor;
        return keep;
      }
      cursor = r.body.nextCursor;
      keep = cursor;
    }
  }

  /**
   * Polls until every expected record is Anchored; once expect() was called, gives up past
   * `settleMs` with an error naming how many were anchored.
   */
  async run(settleMs: number, onPoll?: (anchored: number, expected: number | null) => void): Promise<FollowResult> {
    let after: string | null = null;
    let deadline = Number.POSITIVE_INFINITY;
    for (let poll = 1; !this.#stopped; poll++) {
      if (this.#expected !== null && deadline === Number.POSITIVE_INFINITY) deadline = Date.now() + settleMs;
      if (this.#expected !== null && this.#anchored >= this.#expected) break;
      if (Date.now() > deadline) throw new Error(`only ${this.#anchored} of ${this.#expected ?? '?'} records anchored within ${Math.round(settleMs / 1000)} s of the load's end`);
      const started = Date.now();
      try {
        after = await this.#poll(after, poll % (this.#expected === null ? FULL_EVERY_UNDER_LOAD : FULL_EVERY_SETTLING) === 0);
        this.#refusedSince = null;
      } catch (err) {
        if (!(err instanceof ListingRefused)) throw err;
        this.#refusals++;
        this.#lastRefusal = `${err.status} ${err.code}`;
        this.#refusedSince ??= started;
        if (started - this.#refusedSince > REFUSED_FOR_MS) throw new Error(`${err.message} for ${Math.round(REFUSED_FOR_MS / 1000)} s in a row`);
        await new Promise((r) => setTimeout(r, Math.min(err.retryAfterMs, 5_000)));
      }
      this.#unmatched = this.#unmatched.filter(([req, at]) => !this.#record(req, at));
      onPoll?.(this.#anchored, this.#expected);
      await new Promise((r) => setTimeout(r, Math.max(0, this.o.pollMs - (Date.now() - started))));
    }
    const last = Math.max(-1, ...this.#seconds.keys());
    const series: SeriesPoint[] = [];
    for (let s = 0; s <= last; s++) {
      const h = this.#seconds.get(s);
      const sum = h === undefined ? null : summarize(h);
      series.push({ second: s, ok: sum?.count ?? 0, errors: 0, p50: sum?.p50 ?? 0, p99: sum?.p99 ?? 0, max: sum?.max ?? 0 });
    }
    return {
      anchored: this.#anchored,
      listingRefusals: this.#refusals,
      lastRefusal: this.#lastRefusal,
      lastAnchoredEpochMs: this.#last,
      histogram: this.#hist,
      latency: { label: '202 -> Anchored (from intended send)', summary: summarize(this.#hist), histogram: encodeHistogram(this.#hist), series },
    };
  }
}

import { createKey, request, startService, type ServiceHandle } from '../test/harness/service.js';
import { anchorContract, chainOf } from '../test/harness/pipeline.js';
import { num } from './args.js';

/**
 * bench:pipeline — the real service on the embedded default (queue, chDB, IPFS blockstore, anvil),
 * driven over HTTP by a steady bulk ingest load for a fixed time; then every record is followed
 * until its snapshot is Anchored. Reports the time from each record's 202 to the first poll that
 * saw it Anchored (p50/p99; the poll interval bounds the resolution), anchored records per second,
 * and transactions per 1000 records counted from the chain (Anchored events of the contract).
 *
 *   npm run bench:pipeline [-- --duration 60 --rate 2000 --bulk 250 --poll-ms 200]
 *
 * --rate is records per second (open loop: requests are sent on schedule, at most --in-flight at
 * once; a service that cannot keep up shows as an achieved rate below the target). The load is
 * topped up at the end to a multiple of DRIS_BATCH_MAX_RECORDS, so every batch closes on its size
 * and none waits for the 60 s timer; set --max-wait-ms to change that timer.
 */

const BATCH_RECORDS = 1000;
/** Snapshots per listing page: each poll re-reads at most the last page. */
const PAGE = 20;

/** A record of about 1 KiB, as bench:ingest sends. */
function payload(i: number): Record<string, unknown> {
  const lines = Array.from({ length: 8 }, (_, k) => ({ sku: `SKU-${i}-${k}`, qty: k + 1, price: 12.5 + k, note: 'standard delivery' }));
  return { invoice: `INV-${i}`, customer: { id: `C-${i % 997}`, name: 'Example Customer Ltd', country: 'DE' }, currency: 'EUR', total: 1234.56, lines, memo: 'x'.repeat(200) };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? 0;
}

interface Load {
  /** recordId -> time of the 202 that accepted it. */
  readonly acceptedAt: Map<string, number>;
  readonly firstSendMs: number;
  readonly lastAcceptMs: number;
  readonly requests: number;
  readonly rejectedRequests: number;
  readonly requestP99Ms: number;
}

/** Open-loop bulk load: `rate` records/s in requests of `bulk`, at most `inFlight` outstanding. */
async function drive(svc: ServiceHandle, key: string, acceptedAt: Map<string, number>, o: { seconds: number; rate: number; bulk: number; inFlight: number }): Promise<Load> {
  const requestMs: number[] = [];
  let next = 0;
  let outstanding = 0;
  let rejected = 0;
  let requests = 0;
  let lastAcceptMs = 0;
  const pending = new Set<Promise<void>>();
  const send = (count: number): void => {
    const ids = Array.from({ length: count }, (_, k) => `p-${next + k}`);
    const base = next;
    next += count;
    outstanding += 1;
    requests += 1;
    const sentAt = Date.now();
    const p = request<{ accepted?: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'bench', records: ids.map((recordId, k) => ({ database: 'erp', collection: 'invoices', recordId, recordPayload: payload(base + k) })) },
    })
      .then((r) => {
        const at = Date.now();
        requestMs.push(at - sentAt);
        if (r.status === 202 && r.body.accepted === count) {
          for (const id of ids) acceptedAt.set(id, at);
          lastAcceptMs = at;
        } else {
          rejected += 1;
        }
      })
      .catch(() => {
        rejected += 1;
      })
      .finally(() => {
        outstanding -= 1;
        pending.delete(p);
      });
    pending.add(p);
  };

  const start = Date.now();
  const end = start + o.seconds * 1000;
  let scheduled = 0;
  while (Date.now() < end) {
    const due = Math.floor(((Date.now() - start) / 1000) * o.rate);
    while (scheduled + o.bulk <= due && outstanding < o.inFlight) {
      send(o.bulk);
      scheduled += o.bulk;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all([...pending]);
  // Fill the last batch so it closes on its size: records already accepted, plus what failed.
  const remainder = (BATCH_RECORDS - (acceptedAt.size % BATCH_RECORDS)) % BATCH_RECORDS;
  if (remainder > 0) {
    send(remainder);
    await Promise.all([...pending]);
  }
  requestMs.sort((a, b) => a - b);
  return { acceptedAt, firstSendMs: start, lastAcceptMs, requests, rejectedRequests: rejected, requestP99Ms: percentile(requestMs, 99) };
}

interface SnapshotItem {
  snapshotId: string;
  status: string;
  recordIds: string[];
}

interface FollowState {
  /** The load has ended: every record it will add to acceptedAt is there. */
  done: boolean;
  /** Give up at once (the load failed). */
  aborted: boolean;
}

/**
 * Polls the Anchored snapshots while the load runs and after it, until the load is over and every
 * accepted record was seen in an Anchored snapshot; returns when each was first seen so. Each poll
 * reads past a cursor (snapshots are listed in creation order and anchored in that order); every
 * tenth poll reads the whole listing, in case one was anchored after a later one.
 */
async function follow(svc: ServiceHandle, key: string, acceptedAt: ReadonlyMap<string, number>, state: FollowState, pollMs: number, settleMs: number): Promise<Map<string, number>> {
  const anchoredAt = new Map<string, number>();
  const seen = new Set<string>();
  let deadline = Number.POSITIVE_INFINITY;
  let after: string | null = null;
  for (let poll = 1; !state.done || anchoredAt.size < acceptedAt.size; poll++) {
    if (state.aborted) return anchoredAt;
    if (state.done && deadline === Number.POSITIVE_INFINITY) deadline = Date.now() + settleMs;
    if (Date.now() > deadline) throw new Error(`only ${anchoredAt.size} of ${acceptedAt.size} records anchored within ${settleMs} ms of the load's end`);
    const pollStart = Date.now();
    let cursor: string | null = poll % 10 === 0 ? null : after;
    for (;;) {
      const q: string = `status=Anchored&limit=${PAGE}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const r = await request<{ items: SnapshotItem[]; nextCursor: string | null }>(svc, 'GET', `/api/v1/snapshots?${q}`, { key });
      if (r.status !== 200) throw new Error(`snapshot listing answered ${r.status}`);
      for (const s of r.body.items) {
        if (seen.has(s.snapshotId)) continue;
        seen.add(s.snapshotId);
        for (const id of s.recordIds) if (!anchoredAt.has(id)) anchoredAt.set(id, pollStart);
      }
      if (r.body.nextCursor === null) {
        // The listing's cursor is opaque: keep the one that led to the last page read.
        if (r.body.items.length > 0 && cursor !== after) after = cursor;
        break;
      }
      cursor = r.body.nextCursor;
      after = cursor;
    }
    await new Promise((r) => setTimeout(r, Math.max(0, pollMs - (Date.now() - pollStart))));
  }
  return anchoredAt;
}

async function main(): Promise<void> {
  const seconds = num('duration', 60);
  const rate = num('rate', 2000);
  const bulk = Math.min(BATCH_RECORDS, Math.floor(num('bulk', 250)));
  const inFlight = Math.floor(num('in-flight', 8));
  const pollMs = num('poll-ms', 200);
  const maxWaitMs = Math.floor(num('max-wait-ms', 60_000));
  const settleMs = num('settle-timeout', 300) * 1000;

  const svc = await startService({
    env: {
      DRIS_RATE_LIMITS: 'standard=1000,premium=10000,enterprise=1000000000',
      DRIS_BATCH_MAX_RECORDS: String(BATCH_RECORDS),
      DRIS_BATCH_MAX_WAIT_MS: String(maxWaitMs),
    },
  });
  try {
    const key = (await createKey(svc, { tenantId: 'bench', clientId: 'bench', level: 'enterprise' })).apiKey;
    const acceptedAt = new Map<string, number>();
    const state: FollowState = { done: false, aborted: false };
    const following = follow(svc, key, acceptedAt, state, pollMs, settleMs);
    let load: Load;
    try {
      load = await drive(svc, key, acceptedAt, { seconds, rate, bulk, inFlight });
    } catch (err) {
      state.aborted = true;
      await following.catch(() => undefined);
      throw err;
    }
    state.done = true;
    const anchoredAt = await following;
    // A loop, not Math.max(...values): a spread of a few hundred thousand arguments overflows the stack.
    let lastAnchoredMs = 0;
    for (const at of anchoredAt.values()) if (at > lastAnchoredMs) lastAnchoredMs = at;

    const latencies: number[] = [];
    for (const [id, at] of load.acceptedAt) {
      const anchored = anchoredAt.get(id);
      if (anchored !== undefined) latencies.push(Math.max(0, anchored - at));
    }
    latencies.sort((a, b) => a - b);

    const chain = await chainOf(svc);
    const reader = await anchorContract(chain.rpcUrl, chain.contractAddress);
    let events: { batchSeq: number; txHash: string }[];
    try {
      events = await reader.anchoredEvents();
    } finally {
      reader.close();
    }
    const transactions = new Set(events.map((e) => e.txHash)).size;
    const records = load.acceptedAt.size;
    const ingestSeconds = (load.lastAcceptMs - load.firstSendMs) / 1000;
    const anchorSeconds = (lastAnchoredMs - load.firstSendMs) / 1000;
    const result = {
      anchoredRecordsPerSec: Math.round(records / anchorSeconds),
      ingestToAnchoredP50Ms: percentile(latencies, 50),
      ingestToAnchoredP99Ms: percentile(latencies, 99),
      ingestToAnchoredMaxMs: latencies.at(-1) ?? 0,
      txPerThousandRecords: Math.round((transactions / (records / 1000)) * 1000) / 1000,
      ingestRecordsPerSec: Math.round(records / ingestSeconds),
      targetRecordsPerSec: rate,
      records,
      batches: events.length,
      transactions,
      lastSequence: events.reduce((m, e) => Math.max(m, e.batchSeq), 0),
      bulkRecordsPerRequest: bulk,
      requests: load.requests,
      rejectedRequests: load.rejectedRequests,
      bulkRequestP99Ms: load.requestP99Ms,
      durationSeconds: seconds,
      pollMs,
      batchMaxRecords: BATCH_RECORDS,
      batchMaxWaitMs: maxWaitMs,
    };
    const rows: [string, string][] = [
      ['records accepted (202)', String(records)],
      ['ingest rate achieved / target (records/s)', `${result.ingestRecordsPerSec} / ${rate}`],
      ['anchored records/s (first send to last Anchored)', String(result.anchoredRecordsPerSec)],
      ['202 -> Anchored p50 (ms)', String(result.ingestToAnchoredP50Ms)],
      ['202 -> Anchored p99 (ms)', String(result.ingestToAnchoredP99Ms)],
      ['202 -> Anchored max (ms)', String(result.ingestToAnchoredMaxMs)],
      ['batches / Anchored events on chain', `${result.batches} (last batchSeq ${result.lastSequence})`],
      ['transactions per 1000 records', String(result.txPerThousandRecords)],
      ['bulk requests (rejected)', `${result.requests} (${result.rejectedRequests})`],
      ['bulk request p99 (ms)', String(result.bulkRequestP99Ms)],
    ];
    const width = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
    console.log(JSON.stringify(result));
  } finally {
    await svc.dispose();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

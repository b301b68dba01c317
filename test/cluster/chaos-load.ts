import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The chaos run's clients: records in single and bulk requests for two tenants, a share with an
 * Idempotency-Key, through the load balancer. A client with a key resends the same request under
 * the same key after a connection error, a 5xx, a 429 or a 409 "in progress", until it is answered
 * 202 (within a deadline); a client without one resends only what provably reached no process
 * (the load balancer's own 503: no server was up), since anything else may have been stored.
 */

export interface Tenant {
  readonly tenantId: string;
  readonly apiKey: string;
}

export interface Unit {
  readonly id: number;
  readonly tenant: Tenant;
  readonly kind: 'single' | 'bulk';
  readonly idempotencyKey: string | null;
  readonly recordIds: readonly string[];
}

export interface Acknowledged {
  readonly recordId: string;
  readonly tenantId: string;
  readonly recordHash: string;
  readonly keyed: boolean;
}

export interface LoadCounts {
  /** Records answered 202 (accepted). */
  acknowledged: number;
  /** Records sent without a key whose fate the client cannot know (connection lost, 502, 504, a dris 5xx). */
  unknown: number;
  /** Records refused for good (4xx other than 409 in progress and 429), or given up after the deadline. */
  failed: number;
  /** Requests sent again. */
  retries: number;
  /** Answers by status (0: connection error), every attempt. */
  statuses: Record<string, number>;
}

export interface LoadPlan {
  readonly units: readonly Unit[];
  readonly records: number;
}

/** `total` records: `singleShare` of them one per request, the rest in bulks of `bulkSize`; every `keyEvery`-th request keyed; tenants in turn. */
export function planLoad(tenants: readonly Tenant[], total: number, options: { bulkSize: number; singleShare: number; keyEvery: number }): LoadPlan {
  const singles = Math.round(total * options.singleShare);
  const sizes = [...Array.from({ length: singles }, () => 1)];
  for (let left = total - singles; left > 0; left -= options.bulkSize) sizes.push(Math.min(options.bulkSize, left));
  const units = sizes.map((size, id): Unit => ({
    id,
    tenant: tenants[id % tenants.length] as Tenant,
    kind: id < singles ? 'single' : 'bulk',
    idempotencyKey: id % options.keyEvery === 0 ? `chaos-${id}` : null,
    recordIds: Array.from({ length: size }, (_, i) => `u${id}-${i}`),
  }));
  return { units, records: total };
}

function recordOf(tenantId: string, recordId: string, unit: number): Record<string, unknown> {
  return { tenantId, database: 'chaos', collection: 'load', recordId, recordPayload: { unit, recordId, amount: (unit % 1000) / 10, tags: ['chaos', tenantId] } };
}

function bodyOf(unit: Unit): string {
  if (unit.kind === 'single') return JSON.stringify(recordOf(unit.tenant.tenantId, unit.recordIds[0] as string, unit.id));
  // Both bulk forms: A (tenantId + records) on even units, B (items) on odd ones.
  const records = unit.recordIds.map((r) => recordOf(unit.tenant.tenantId, r, unit.id));
  return JSON.stringify(unit.id % 2 === 0 ? { tenantId: unit.tenant.tenantId, records: records.map(({ tenantId: _t, ...rest }) => rest) } : { items: records });
}

type Attempt =
  | { readonly kind: 'accepted'; readonly items: readonly { recordId: string; recordHash: string }[]; readonly rejected: number }
  | { readonly kind: 'retry'; readonly status: number; readonly waitMs: number }
  | { readonly kind: 'unknown'; readonly status: number }
  | { readonly kind: 'refused'; readonly status: number };

interface BulkAnswer {
  items?: { recordId: string; recordHash: string }[];
  rejected?: unknown[];
  recordId?: string;
  recordHash?: string;
  error?: string;
}

async function attempt(url: string, unit: Unit, body: string, counts: LoadCounts): Promise<Attempt> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': unit.tenant.apiKey };
  if (unit.idempotencyKey !== null) headers['idempotency-key'] = unit.idempotencyKey;
  const keyed = unit.idempotencyKey !== null;
  let status = 0;
  let text = '';
  let retryAfter = 0;
  try {
    const res = await fetch(`${url}/api/v1/records${unit.kind === 'bulk' ? '/bulk' : ''}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(30_000) });
    status = res.status;
    retryAfter = Number(res.headers.get('retry-after') ?? '0');
    text = await res.text();
  } catch {
    status = 0;
  }
  counts.statuses[String(status)] = (counts.statuses[String(status)] ?? 0) + 1;
  let parsed: BulkAnswer | null = null;
  try {
    parsed = JSON.parse(text) as BulkAnswer;
  } catch {
    parsed = null;
  }
  if (status === 202 && parsed !== null) {
    const items = unit.kind === 'single' ? [{ recordId: parsed.recordId ?? '', recordHash: parsed.recordHash ?? '' }] : (parsed.items ?? []);
    return { kind: 'accepted', items, rejected: parsed.rejected?.length ?? 0 };
  }
  const waitMs = Math.min(2000, Math.max(200, retryAfter * 1000));
  // HAProxy's own 503 (no JSON body): no api process was up, nothing was forwarded.
  if (status === 503 && parsed === null) return { kind: 'retry', status, waitMs };
  const transient = status === 0 || status === 429 || status >= 500 || (status === 409 && parsed?.error === 'idempotency_in_progress');
  if (transient) return keyed ? { kind: 'retry', status, waitMs } : { kind: 'unknown', status };
  return { kind: 'refused', status };
}

/** Sends one unit to its end (acknowledged, unknown or refused); resends as the header comment says. */
async function runUnit(url: string, unit: Unit, counts: LoadCounts, acked: Acknowledged[], deadlineMs: number): Promise<void> {
  const body = bodyOf(unit);
  const until = Date.now() + deadlineMs;
  for (let n = 0; ; n++) {
    const a = await attempt(url, unit, body, counts);
    if (a.kind === 'accepted') {
      for (const item of a.items) acked.push({ recordId: item.recordId, tenantId: unit.tenant.tenantId, recordHash: item.recordHash, keyed: unit.idempotencyKey !== null });
      counts.acknowledged += a.items.length;
      // Items of an unkeyed bulk refused by a dependency may have been stored: unknown.
      counts.unknown += a.rejected;
      return;
    }
    if (a.kind === 'unknown') {
      counts.unknown += unit.recordIds.length;
      return;
    }
    if (a.kind === 'refused' || Date.now() + a.waitMs > until) {
      counts.failed += unit.recordIds.length;
      return;
    }
    counts.retries += 1;
    await sleep(a.waitMs);
  }
}

export interface LoadOptions {
  readonly url: string;
  readonly concurrency: { readonly single: number; readonly bulk: number };
  /** A request is given up after this long of retries. */
  readonly unitDeadlineMs: number;
  /**
   * Called before each unit with the share (0..1) of its kind's records already sent; resolves
   * when the unit may go. The chaos schedule holds both kinds back until its faults have run, so
   * that every fault meets single and bulk requests alike.
   */
  readonly gate: (kind: Unit['kind'], sentShare: number) => Promise<void>;
}

export interface LoadProgress {
  /** Share (0..1) of each kind's records sent so far. */
  readonly sent: Record<Unit['kind'], number>;
}

/** Starts the plan with a pool per kind; `done` resolves when every unit has ended. */
export function startLoad(plan: LoadPlan, options: LoadOptions): { progress: LoadProgress; done: Promise<{ counts: LoadCounts; acknowledged: Acknowledged[] }> } {
  const counts: LoadCounts = { acknowledged: 0, unknown: 0, failed: 0, retries: 0, statuses: {} };
  const acknowledged: Acknowledged[] = [];
  const progress = { sent: { single: 0, bulk: 0 } };
  const singles = plan.units.filter((u) => u.kind === 'single');
  const bulks = plan.units.filter((u) => u.kind === 'bulk');
  const totals = { single: 0, bulk: 0 };
  for (const u of plan.units) totals[u.kind] += u.recordIds.length;
  const sentRecords = { single: 0, bulk: 0 };
  const worker = async (kind: Unit['kind'], queue: Unit[]): Promise<void> => {
    for (;;) {
      await options.gate(kind, progress.sent[kind]);
      const unit = queue.shift();
      if (unit === undefined) return;
      sentRecords[kind] += unit.recordIds.length;
      progress.sent[kind] = sentRecords[kind] / Math.max(1, totals[kind]);
      await runUnit(options.url, unit, counts, acknowledged, options.unitDeadlineMs);
    }
  };
  const done = Promise.all([
    ...Array.from({ length: options.concurrency.single }, () => worker('single', singles)),
    ...Array.from({ length: options.concurrency.bulk }, () => worker('bulk', bulks)),
  ]).then(() => ({ counts, acknowledged }));
  return { progress, done };
}

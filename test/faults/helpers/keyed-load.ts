import { request, type ServiceHandle } from '../../harness/service.js';

/**
 * Clients that behave as the idempotency contract asks them to: every request carries an
 * Idempotency-Key, and after a connection error, a 5xx or a 409 "in progress" the same request is
 * sent again with the same key until it is answered 202. What they were answered is what the
 * checks hold the service to.
 */

/** One record as a 202 named it. */
export interface Acked {
  readonly recordId: string;
  readonly ingestId: string;
  readonly recordHash: string;
}

export interface LoadStats {
  requests: number;
  attempts: number;
  /** Attempts answered by a connection error (the service was down or died meanwhile). */
  connectionErrors: number;
  /** Attempts answered 5xx or 409 in progress. */
  retryableAnswers: number;
  /** Answers that break the contract (any other status), with their bodies. */
  readonly unexpected: string[];
  /** 202 answers that were replays of an earlier acceptance. */
  replayed: number;
}

export interface KeyedRequest {
  readonly key: string;
  readonly route: '/api/v1/records' | '/api/v1/records/bulk';
  readonly body: unknown;
  readonly recordIds: readonly string[];
}

interface SingleAnswer {
  recordId: string;
  ingestId: string;
  recordHash: string;
  idempotencyReplayed: boolean;
}
interface BulkAnswer {
  accepted: number;
  items: SingleAnswer[];
  rejected: unknown[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function singleRequest(tenantId: string, key: string, n: number): KeyedRequest {
  const recordId = `rec-${key}`;
  return {
    key,
    route: '/api/v1/records',
    body: { tenantId, database: 'faults', collection: 'load', recordId, recordPayload: { key, n, pad: 'x'.repeat(200) } },
    recordIds: [recordId],
  };
}

export function bulkRequest(tenantId: string, key: string, size: number): KeyedRequest {
  const recordIds = Array.from({ length: size }, (_, i) => `rec-${key}-${i}`);
  return {
    key,
    route: '/api/v1/records/bulk',
    body: { tenantId, records: recordIds.map((recordId, i) => ({ database: 'faults', collection: 'load', recordId, recordPayload: { key, i, pad: 'y'.repeat(100) } })) },
    recordIds,
  };
}

/**
 * Sends until 202 (or the deadline); returns the records the 202 names, null when the deadline
 * passed first. `target` is read on every attempt: the service's port changes across restarts.
 */
export async function sendUntilAccepted(target: () => ServiceHandle, apiKey: string, req: KeyedRequest, stats: LoadStats, deadlineMs: number): Promise<Acked[] | null> {
  stats.requests += 1;
  for (let attempt = 0; Date.now() < deadlineMs; attempt++) {
    stats.attempts += 1;
    let res;
    try {
      res = await request<SingleAnswer & BulkAnswer & { error?: string }>(target(), 'POST', req.route, { key: apiKey, body: req.body, headers: { 'idempotency-key': req.key } });
    } catch {
      stats.connectionErrors += 1;
      await sleep(100 + Math.min(400, attempt * 50));
      continue;
    }
    if (res.status === 202) {
      if (req.route === '/api/v1/records') {
        if (res.body.idempotencyReplayed) stats.replayed += 1;
        return [{ recordId: res.body.recordId, ingestId: res.body.ingestId, recordHash: res.body.recordHash }];
      }
      if (res.body.items.some((i) => i.idempotencyReplayed)) stats.replayed += 1;
      if (res.body.accepted !== req.recordIds.length) stats.unexpected.push(`bulk ${req.key} accepted ${res.body.accepted} of ${req.recordIds.length}: ${res.text.slice(0, 300)}`);
      return res.body.items.map((i) => ({ recordId: i.recordId, ingestId: i.ingestId, recordHash: i.recordHash }));
    }
    if (res.status >= 500 || (res.status === 409 && res.body.error === 'idempotency_in_progress')) {
      stats.retryableAnswers += 1;
      await sleep(100 + Math.min(400, attempt * 50));
      continue;
    }
    stats.unexpected.push(`${req.route} ${req.key}: ${res.status} ${res.text.slice(0, 300)}`);
    return null;
  }
  stats.unexpected.push(`${req.key}: not accepted before the deadline`);
  return null;
}

export function newStats(): LoadStats {
  return { requests: 0, attempts: 0, connectionErrors: 0, retryableAnswers: 0, unexpected: [], replayed: 0 };
}

/** A record as GET /api/v1/records lists it. */
export interface Listed {
  readonly recordId: string;
  readonly ingestId: string;
  readonly recordHash: string;
  readonly status: string;
  readonly snapshotId: string | null;
}

/** Every record of the tenant's `load` collection, all pages. */
export async function listAll(svc: ServiceHandle, apiKey: string, tenantId: string): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 10_000; page++) {
    const q: string = `tenantId=${tenantId}&collection=load&limit=1000${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const r = await request<{ items: Listed[]; nextCursor: string | null }>(svc, 'GET', `/api/v1/records?${q}`, { key: apiKey });
    if (r.status !== 200) throw new Error(`records listing answered ${r.status}`);
    out.push(...r.body.items);
    cursor = r.body.nextCursor;
    if (cursor === null) break;
  }
  return out;
}

export interface Reckoning {
  acknowledged: number;
  listed: number;
  /** Acknowledged records missing from the index, or listed with another hash. */
  lost: number;
  /** recordIds listed more than once (each stands for one item of one keyed request). */
  storedTwice: number;
  /** Listed records no 202 ever named. */
  unacknowledged: number;
  /** Two 202 answers of one key naming different records. */
  inconsistentAnswers: number;
}

export function reckon(acked: ReadonlyMap<string, readonly Acked[]>, listed: readonly Listed[]): Reckoning {
  const byIngest = new Map(listed.map((l) => [l.ingestId, l]));
  const byRecordId = new Map<string, number>();
  for (const l of listed) byRecordId.set(l.recordId, (byRecordId.get(l.recordId) ?? 0) + 1);
  const ackedIds = new Set<string>();
  let lost = 0;
  let acknowledged = 0;
  for (const records of acked.values()) {
    for (const a of records) {
      acknowledged += 1;
      ackedIds.add(a.ingestId);
      if (byIngest.get(a.ingestId)?.recordHash !== a.recordHash) lost += 1;
    }
  }
  return {
    acknowledged,
    listed: listed.length,
    lost,
    storedTwice: [...byRecordId.values()].filter((n) => n > 1).length,
    unacknowledged: listed.filter((l) => !ackedIds.has(l.ingestId)).length,
    inconsistentAnswers: 0,
  };
}

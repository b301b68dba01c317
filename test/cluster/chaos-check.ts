import { setTimeout as sleep } from 'node:timers/promises';
import { rootOfLeaves, type BatchBody } from '../harness/pipeline.js';
import { request } from '../harness/service.js';
import type { Acknowledged, Tenant } from './chaos-load.js';

/**
 * What the chaos run finds afterwards, from outside: the index through `GET /api/v1/records`
 * (every page, both tenants), the batches through `GET /api/v1/batches/{id}`, their manifests
 * from Kubo, and (in the test) the contract's Anchored events on the chain.
 */

export interface IndexedRecord {
  readonly recordId: string;
  readonly tenantId: string;
  readonly recordHash: string;
  readonly status: string;
  readonly batchId: string | null;
}

interface RecordPage {
  items: { recordId: string; tenantId: string; recordHash: string; status: string; batchId?: string | null }[];
  nextCursor: string | null;
}

/** Reads that were answered 5xx (or not at all) and tried again, with what they said: reads are safe to repeat. */
export const readRetries: string[] = [];

/** A GET tried again after a 5xx or a connection error (at most 10 times, a second apart). */
async function read<T>(url: string, route: string, key: string): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const r = await request<T>({ url }, 'GET', route, { key }).catch((err: unknown) => ({ status: 0, text: err instanceof Error ? err.message : String(err), body: undefined as T }));
    if (r.status === 200) return r.body;
    if ((r.status !== 0 && r.status < 500) || attempt >= 10) throw new Error(`GET ${route.split('?')[0] ?? route}: ${r.status} ${r.text.slice(0, 300)}`);
    readRetries.push(`${r.status} ${r.text.slice(0, 120)}`);
    await sleep(1000);
  }
}

/** Every record of the run's database in the index, all pages, both tenants. */
export async function indexedRecords(url: string, tenants: readonly Tenant[]): Promise<IndexedRecord[]> {
  const out: IndexedRecord[] = [];
  for (const tenant of tenants) {
    let cursor: string | null = null;
    for (let pages = 0; pages < 10_000; pages++) {
      const q: string = `tenantId=${tenant.tenantId}&database=chaos&limit=1000${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await read<RecordPage>(url, `/api/v1/records?${q}`, tenant.apiKey);
      for (const i of page.items) out.push({ recordId: i.recordId, tenantId: i.tenantId, recordHash: i.recordHash, status: i.status, batchId: i.batchId ?? null });
      cursor = page.nextCursor;
      if (cursor === null) break;
    }
  }
  return out;
}

export interface Settled {
  readonly records: IndexedRecord[];
  /** Seconds from the end of the load until every acknowledged record was found and every record anchored. */
  readonly seconds: number;
  readonly settled: boolean;
}

/** Polls the index until every acknowledged record is there and every record is Anchored, or the deadline passes. */
export async function waitSettled(url: string, tenants: readonly Tenant[], acked: readonly Acknowledged[], timeoutMs: number): Promise<Settled> {
  const started = Date.now();
  let records: IndexedRecord[] = [];
  for (;;) {
    records = await indexedRecords(url, tenants);
    const found = new Set(records.map((r) => `${r.tenantId}/${r.recordId}`));
    const allFound = acked.every((a) => found.has(`${a.tenantId}/${a.recordId}`));
    if (allFound && records.every((r) => r.status === 'Anchored')) return { records, seconds: (Date.now() - started) / 1000, settled: true };
    if (Date.now() - started > timeoutMs) return { records, seconds: (Date.now() - started) / 1000, settled: false };
    await sleep(3000);
  }
}

export interface Counts {
  readonly acknowledged: number;
  /** Acknowledged records found in the index with the hash their 202 answered. */
  readonly found: number;
  /** Acknowledged records whose hash is a leaf of exactly one Anchored batch. */
  readonly anchored: number;
  readonly lost: number;
  /** Records (acknowledged or not) the index holds more than once. */
  readonly duplicated: number;
  /** Acknowledged records whose hash is a leaf of several batches. */
  readonly anchoredTwice: number;
}

export function count(acked: readonly Acknowledged[], records: readonly IndexedRecord[], leafBatches: ReadonlyMap<string, number>): Counts {
  const byId = new Map<string, IndexedRecord[]>();
  for (const r of records) {
    const k = `${r.tenantId}/${r.recordId}`;
    byId.set(k, [...(byId.get(k) ?? []), r]);
  }
  let found = 0;
  let lost = 0;
  let anchored = 0;
  let anchoredTwice = 0;
  for (const a of acked) {
    const hits = byId.get(`${a.tenantId}/${a.recordId}`) ?? [];
    if (hits.some((h) => h.recordHash === a.recordHash)) found += 1;
    else lost += 1;
    const times = leafBatches.get(a.recordHash) ?? 0;
    if (times === 1) anchored += 1;
    if (times > 1) anchoredTwice += 1;
  }
  const duplicated = [...byId.values()].filter((hits) => hits.length > 1).length;
  return { acknowledged: acked.length, found, anchored, lost, duplicated, anchoredTwice };
}

export interface Manifest {
  readonly batchId: string;
  readonly batchSeq: number;
  readonly merkleRoot: string;
  readonly leaves: readonly string[];
}

/** The batches these records name, and each one's manifest from Kubo (RPC `cat`). */
export async function batchesAndManifests(url: string, key: string, kuboApiUrl: string, batchIds: readonly string[]): Promise<{ batches: BatchBody[]; manifests: Manifest[] }> {
  const batches: BatchBody[] = [];
  const manifests: Manifest[] = [];
  for (const id of batchIds) {
    const b = { body: await read<BatchBody>(url, `/api/v1/batches/${id}`, key) };
    batches.push(b.body);
    if (b.body.ipfsCid === null) continue;
    const res = await fetch(`${kuboApiUrl}/api/v0/cat?arg=${encodeURIComponent(b.body.ipfsCid)}`, { method: 'POST', signal: AbortSignal.timeout(10_000) });
    if (res.status !== 200) throw new Error(`manifest ${b.body.ipfsCid}: ${res.status}`);
    manifests.push((await res.json()) as Manifest);
  }
  batches.sort((a, b) => (a.batchSeq ?? 0) - (b.batchSeq ?? 0));
  return { batches, manifests };
}

/** recordHash -> how many Anchored batches' manifests hold it as a leaf. */
export function leafCounts(batches: readonly BatchBody[], manifests: readonly Manifest[]): Map<string, number> {
  const anchored = new Set(batches.filter((b) => b.status === 'Anchored').map((b) => b.batchId));
  const counts = new Map<string, number>();
  for (const m of manifests) {
    if (!anchored.has(m.batchId)) continue;
    for (const leaf of m.leaves) counts.set(leaf, (counts.get(leaf) ?? 0) + 1);
  }
  return counts;
}

/** Manifests whose leaves do not give the batch's root (RFC 9162, recomputed here). */
export function rootMismatches(batches: readonly BatchBody[], manifests: readonly Manifest[]): string[] {
  const root = new Map(batches.map((b) => [b.batchId, b.merkleRoot]));
  return manifests.filter((m) => rootOfLeaves(m.leaves) !== root.get(m.batchId)).map((m) => m.batchId);
}

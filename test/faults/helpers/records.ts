import { readdirSync, readFileSync } from 'node:fs';
import { request, type ServiceHandle } from '../../harness/service.js';

/**
 * Ingestion as a client sees it, for the fault tests: every record has its own recordId, every
 * answer is kept; what was answered 202 must later be listed exactly once with its hash.
 */

export interface ErrorBody {
  readonly error: string;
  readonly message: string;
  readonly details: unknown[];
}

export interface Answer {
  readonly status: number;
  readonly kind: 'single' | 'bulk';
  readonly retryAfter: string | null;
  readonly body: unknown;
}

export class Ledger {
  /** recordId → recordHash of every record answered 202. */
  readonly acked = new Map<string, string>();
  readonly answers: Answer[] = [];
  /** Requests that got no answer at all (connection refused or reset). */
  unanswered = 0;
  private next = 0;

  constructor(
    readonly tenantId: string,
    readonly collection: string,
  ) {}

  private record(): { tenantId: string; database: string; collection: string; recordId: string; recordPayload: Record<string, unknown> } {
    const recordId = `${this.collection}-${this.next++}`;
    return { tenantId: this.tenantId, database: 'faults', collection: this.collection, recordId, recordPayload: { recordId, pad: 'x'.repeat(200) } };
  }

  /** One record; null when the connection failed. */
  async single(svc: { url: string }, key: string): Promise<Answer | null> {
    const rec = this.record();
    try {
      const r = await request<{ recordId?: string; recordHash?: string }>(svc, 'POST', '/api/v1/records', { key, body: rec });
      const a: Answer = { status: r.status, kind: 'single', retryAfter: r.headers.get('retry-after'), body: r.body };
      this.answers.push(a);
      if (r.status === 202 && typeof r.body.recordHash === 'string') this.acked.set(rec.recordId, r.body.recordHash);
      return a;
    } catch {
      this.unanswered += 1;
      return null;
    }
  }

  /** `count` records in one bulk request (form A); null when the connection failed. */
  async bulk(svc: { url: string }, key: string, count: number): Promise<Answer | null> {
    const records = Array.from({ length: count }, () => {
      const { tenantId: _t, ...rest } = this.record();
      return rest;
    });
    try {
      const r = await request<{ items?: { recordId: string; recordHash: string; idempotencyReplayed: boolean }[] }>(svc, 'POST', '/api/v1/records/bulk', {
        key,
        body: { tenantId: this.tenantId, records },
      });
      const a: Answer = { status: r.status, kind: 'bulk', retryAfter: r.headers.get('retry-after'), body: r.body };
      this.answers.push(a);
      if (r.status === 202) for (const item of r.body.items ?? []) this.acked.set(item.recordId, item.recordHash);
      return a;
    } catch {
      this.unanswered += 1;
      return null;
    }
  }
}

/** The spec's error body: `{ error, message, details }`. */
export function isErrorBody(body: unknown): body is ErrorBody {
  const b = body as Partial<ErrorBody> | null;
  return typeof b === 'object' && b !== null && typeof b.error === 'string' && typeof b.message === 'string' && Array.isArray(b.details);
}

interface Listed {
  recordId: string;
  recordHash: string;
}

/** Every record of the ledger's collection as listed by GET /api/v1/records (all pages). */
export async function listRecords(svc: ServiceHandle, key: string, ledger: Ledger): Promise<Listed[]> {
  const out: Listed[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 1000; page++) {
    const q = new URLSearchParams({ tenantId: ledger.tenantId, collection: ledger.collection, limit: '1000' });
    if (cursor !== null) q.set('cursor', cursor);
    const r = await request<{ items: Listed[]; nextCursor: string | null }>(svc, 'GET', `/api/v1/records?${q.toString()}`, { key });
    if (r.status !== 200) throw new Error(`listing records answered ${r.status}: ${r.text.slice(0, 200)}`);
    out.push(...r.body.items);
    cursor = r.body.nextCursor;
    if (cursor === null) return out;
  }
  throw new Error('more than 1000 pages');
}

export interface Reconciliation {
  readonly missing: string[];
  readonly duplicated: string[];
  readonly wrongHash: string[];
  readonly listed: number;
}

/** Compares what was answered 202 with what is listed. */
export async function reconcile(svc: ServiceHandle, key: string, ledger: Ledger): Promise<Reconciliation> {
  const listed = await listRecords(svc, key, ledger);
  const counts = new Map<string, number>();
  const hashes = new Map<string, string>();
  for (const r of listed) {
    counts.set(r.recordId, (counts.get(r.recordId) ?? 0) + 1);
    hashes.set(r.recordId, r.recordHash);
  }
  const missing: string[] = [];
  const duplicated: string[] = [];
  const wrongHash: string[] = [];
  for (const [id, hash] of ledger.acked) {
    const n = counts.get(id) ?? 0;
    if (n === 0) missing.push(id);
    else if (n > 1) duplicated.push(id);
    else if (hashes.get(id) !== hash) wrongHash.push(id);
  }
  return { missing, duplicated, wrongHash, listed: listed.length };
}

/** Waits (bounded) until every acknowledged record is listed; returns the last reconciliation. */
export async function awaitReconciled(svc: ServiceHandle, key: string, ledger: Ledger, timeoutMs = 60_000): Promise<Reconciliation> {
  const deadline = Date.now() + timeoutMs;
  let last: Reconciliation | null = null;
  for (;;) {
    try {
      last = await reconcile(svc, key, ledger);
      if (last.missing.length === 0) return last;
    } catch {
      // the index may not answer yet
    }
    if (Date.now() > deadline) return last ?? { missing: [...ledger.acked.keys()], duplicated: [], wrongHash: [], listed: 0 };
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The pid of the node process serving (under strace the child is strace): from its JSON log lines. */
export function servicePid(svc: ServiceHandle): number | null {
  for (const line of svc.logs) {
    const m = /"pid":(\d+)/.exec(line);
    if (m?.[1] !== undefined) return Number(m[1]);
  }
  return null;
}

/** Pids of the processes descending from `root` (children, grandchildren, ...), from /proc. */
export function descendants(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // exited meanwhile
    }
  }
  const out: number[] = [];
  const frontier = [root];
  while (frontier.length > 0 && out.length < 10_000) {
    const p = frontier.pop() as number;
    for (const [pid, ppid] of parentOf) {
      if (ppid === p) {
        out.push(pid);
        frontier.push(pid);
      }
    }
  }
  return out;
}

/**
 * SIGKILLs a service and everything it started (its anvil), then waits for the child to exit.
 * Under a wrapper such as strace, the wrapper exits only once every tracee has; a killed wrapper
 * would leave them running.
 */
export async function killTree(svc: ServiceHandle): Promise<void> {
  const pid = servicePid(svc);
  if (pid !== null) {
    for (const p of [...descendants(pid), pid]) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
  const exited = await Promise.race([svc.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 10_000))]);
  if (!exited) await svc.kill('SIGKILL');
}

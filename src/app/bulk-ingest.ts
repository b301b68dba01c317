import { DrisError, errorBody, toDrisError } from '../errors/dris-error.js';
import type { PublishOptions, PublishResult, RecordQueue } from '../domain/records/ports.js';
import type { AcceptedRecord, BulkIngestResponse, BulkItemAccepted, BulkItemRejected, IngestRecordResponse, OutgoingRecord } from '../domain/records/types.js';
import type { FieldError } from '../errors/dris-error.js';
import type { RequestClaims } from './idempotency-claims.js';
import { answerOf, formParts, messageIdOf, messageWeight, noteText, parseNote, recordFingerprint, STORED_ACCEPTED, type Candidate, type IngestOutcome } from './ingest-messages.js';

export const MAX_BULK_ITEMS = 1000;

export interface BulkDeps {
  readonly queue: RecordQueue;
  readonly claims: RequestClaims;
  readonly build: (candidates: readonly Candidate[]) => OutgoingRecord[] | Promise<OutgoingRecord[]>;
  readonly idemKey: (tenantId: string, key: string) => string;
  /** The request's own key (Idempotency-Key header) and the fingerprint of its body. */
  readonly request: { readonly key: string; readonly fingerprint: string } | null;
  readonly arrayName: string;
}

/** One queue message of the request and the candidates whose records it carries. */
interface Message {
  readonly cands: readonly Candidate[];
  readonly records: readonly OutgoingRecord[];
  /** Absent for the parts of a request without a key: the queue may coalesce them with others. */
  readonly options: PublishOptions | undefined;
  /** The item's own idempotency key, for a message of one keyed item. */
  readonly itemKey: string | null;
}

type Published = { readonly ok: true; readonly result: PublishResult } | { readonly ok: false; readonly err: DrisError };

/**
 * A bulk item's answer: the members of the record's own 202 answer (`answerOf`) but its scheme,
 * placed at its index. Written out member by member: a rest and a spread per item showed in
 * profiles of 1000-record requests.
 */
function itemOf(index: number, a: Omit<IngestRecordResponse, 'idempotencyReplayed' | 'hashScheme'>, replayed: boolean): BulkItemAccepted {
  return { index, recordId: a.recordId, recordHash: a.recordHash, tenantId: a.tenantId, acceptedAt: a.acceptedAt, payloadHash: a.payloadHash, salt: a.salt, ingestId: a.ingestId, idempotencyReplayed: replayed };
}

/**
 * One bulk request: every item validated on its own; items with their own idempotency key claimed
 * in one round trip and published each as a message of its own under the key's message id; the
 * other items in parts, under message ids derived from the request's key when it has one. The
 * answer says, item by item, what is stored: a request with a key is either wholly stored or
 * answered with an error (its retry stores the rest and finds what was stored), one without a key
 * lists items whose message could not be stored as rejected with the queue's error code.
 */
export class BulkIngestion {
  private readonly rejected: BulkItemRejected[] = [];
  private readonly rejectedFields: FieldError[] = [];
  private readonly accepted = new Map<number, BulkItemAccepted>();
  private readonly fresh: Candidate[] = [];
  /** Later items repeating an earlier item's key with the same request: they share its outcome. */
  private readonly aliases: { readonly index: number; readonly of: number; readonly recordId: string }[] = [];

  constructor(private readonly deps: BulkDeps) {}

  reject(index: number, recordId: string | null, err: DrisError): void {
    const b = errorBody(err);
    this.rejected.push({ index, recordId, error: b.error, details: b.details });
    this.rejectedFields.push(...(err.fields.length > 0 ? err.fields : [{ path: `${this.deps.arrayName}[${index}]`, code: err.code, message: err.message }]));
  }

  add(c: Candidate): void {
    this.fresh.push(c);
  }

  async run(total: number): Promise<IngestOutcome<BulkIngestResponse>> {
    const owned = await this.claimItemKeys();
    const unkeyed = this.fresh.filter((c) => c.idempotencyKey === null);
    const toBuild = [...owned.map((o) => o.cand), ...unkeyed].sort((a, b) => a.index - b.index);
    const built = toBuild.length > 0 ? await this.deps.build(toBuild) : [];
    const recordOf = new Map<number, OutgoingRecord>(toBuild.map((c, k) => [c.index, built[k] as OutgoingRecord]));
    const messages = this.plan(owned, unkeyed, recordOf);
    const results = await this.publish(messages);
    let failure: DrisError | null = null;
    for (const [k, m] of messages.entries()) {
      const r = results[k] as Published;
      if (!r.ok) {
        failure ??= r.err;
        if (this.deps.request === null) for (const c of m.cands) this.reject(c.index, c.req.recordId, r.err);
        if (m.itemKey !== null) await this.deps.claims.release([m.itemKey]);
        continue;
      }
      await this.settle(m, r.result);
    }
    // A request with a key is stored whole or not answered 202: its retry completes it.
    if (failure !== null && (this.deps.request !== null || this.accepted.size === 0)) throw failure;
    return this.answer(total);
  }

  /** Claims the items' own keys at once; returns the candidates that now own theirs. */
  private async claimItemKeys(): Promise<{ cand: Candidate; key: string }[]> {
    const first = new Map<string, Candidate>();
    const claimed: { cand: Candidate; key: string }[] = [];
    for (const c of this.fresh) {
      if (c.idempotencyKey === null) continue;
      const key = this.deps.idemKey(c.req.tenantId, c.idempotencyKey);
      const earlier = first.get(key);
      if (earlier === undefined) {
        first.set(key, c);
        claimed.push({ cand: c, key });
      } else if (earlier.fingerprint() === c.fingerprint()) {
        this.aliases.push({ index: c.index, of: earlier.index, recordId: c.req.recordId });
      } else {
        this.reject(c.index, c.req.recordId, new DrisError('idempotency_conflict', 'the idempotency key was used for a different request'));
      }
    }
    if (claimed.length === 0) return [];
    const outcomes = await this.deps.claims.claim(claimed.map((c) => ({ key: c.key, fingerprint: c.cand.fingerprint() })));
    const owned: { cand: Candidate; key: string }[] = [];
    for (const [k, o] of outcomes.entries()) {
      const { cand, key } = claimed[k] as { cand: Candidate; key: string };
      if (o.kind === 'owned') owned.push({ cand, key });
      else if (o.kind === 'replay') this.accepted.set(cand.index, itemOf(cand.index, JSON.parse(o.body) as IngestRecordResponse, true));
      else if (o.kind === 'conflict') this.reject(cand.index, cand.req.recordId, new DrisError('idempotency_conflict', 'the idempotency key was used for a different request'));
      else this.reject(cand.index, cand.req.recordId, new DrisError('idempotency_in_progress', 'a request with this idempotency key is still in progress'));
    }
    return owned;
  }

  private plan(owned: readonly { cand: Candidate; key: string }[], unkeyed: readonly Candidate[], recordOf: ReadonlyMap<number, OutgoingRecord>): Message[] {
    const messages: Message[] = [];
    // The request's parts first: a part stored under the key for another body is a conflict found
    // before anything else of this request is published.
    const parts = formParts(unkeyed, messageWeight, this.deps.queue.maxMessageBytes);
    const request = this.deps.request;
    for (const [p, cands] of parts.entries()) {
      // Without a key nothing names the part, so it need not travel alone: the queue coalesces it
      // with what other requests publish meanwhile (fewer, larger messages).
      const options: PublishOptions | undefined =
        request === null ? undefined : { msgId: messageIdOf(request.key, p), note: noteText({ k: request.key, fp: request.fingerprint, p, idx: cands.map((c) => c.index) }) };
      messages.push({ cands, records: cands.map((c) => recordOf.get(c.index) as OutgoingRecord), options, itemKey: null });
    }
    for (const { cand, key } of owned) {
      messages.push({ cands: [cand], records: [recordOf.get(cand.index) as OutgoingRecord], options: { msgId: messageIdOf(key), note: noteText({ k: key }) }, itemKey: key });
    }
    return messages;
  }

  private async publish(messages: readonly Message[]): Promise<Published[]> {
    const one = (m: Message): Promise<Published> =>
      this.deps.queue.publish(m.records, m.options).then(
        (result): Published => ({ ok: true, result }),
        (err: unknown): Published => ({ ok: false, err: toDrisError(err) }),
      );
    if (this.deps.request === null || messages.length < 2 || messages[0]?.itemKey !== null) return Promise.all(messages.map(one));
    const head = await one(messages[0]);
    if (head.ok && head.result.duplicate) this.assertSameRequest(head.result);
    return [head, ...(await Promise.all(messages.slice(1).map(one)))];
  }

  private assertSameRequest(result: PublishResult & { duplicate: true }): void {
    if (parseNote(result.note)?.fp !== this.deps.request?.fingerprint) {
      throw new DrisError('idempotency_conflict', 'the idempotency key was used for a different request');
    }
  }

  /** Takes a message's outcome into the answer: its own records, or those stored first under its id. */
  private async settle(m: Message, result: PublishResult): Promise<void> {
    if (!result.duplicate) {
      for (const [k, c] of m.cands.entries()) {
        const record = m.records[k] as OutgoingRecord;
        // The record carries every member of its answer.
        this.accepted.set(c.index, itemOf(c.index, record, false));
        if (m.itemKey !== null) await this.completeItem(m.itemKey, record, answerOf(record));
      }
      return;
    }
    if (m.itemKey !== null) {
      const cand = m.cands[0] as Candidate;
      const stored = result.records[0];
      if (stored === undefined) throw new DrisError('internal_error', 'a duplicate message without records');
      const answer = answerOf(stored);
      await this.completeItem(m.itemKey, stored, answer);
      if (recordFingerprint(stored) === cand.fingerprint()) this.accepted.set(cand.index, itemOf(cand.index, answer, true));
      else this.reject(cand.index, cand.req.recordId, new DrisError('idempotency_conflict', 'the idempotency key was used for a different request'));
      return;
    }
    this.assertSameRequest(result);
    const idx = parseNote(result.note)?.idx ?? [];
    const storedAt = new Map<number, AcceptedRecord>();
    for (const [j, r] of result.records.entries()) if (idx[j] !== undefined) storedAt.set(idx[j], r);
    for (const c of m.cands) {
      const stored = storedAt.get(c.index);
      // The same body forms the same parts; an item missing from the stored part was not stored.
      if (stored === undefined) this.reject(c.index, c.req.recordId, new DrisError('idempotency_conflict', 'the idempotency key was used for a different request'));
      else this.accepted.set(c.index, itemOf(c.index, answerOf(stored), true));
    }
  }

  private completeItem(key: string, stored: Omit<AcceptedRecord, 'payload'>, answer: IngestRecordResponse): Promise<void> {
    return this.deps.claims.complete(key, { state: 'done', fingerprint: recordFingerprint(stored), status: STORED_ACCEPTED, body: JSON.stringify(answer) });
  }

  private answer(total: number): IngestOutcome<BulkIngestResponse> {
    // An alias takes the outcome of the item it repeats: looked up by index, not searched for.
    const firstRejection = new Map<number, BulkItemRejected>();
    for (const r of this.rejected) if (!firstRejection.has(r.index)) firstRejection.set(r.index, r);
    for (const a of this.aliases) {
      const of = this.accepted.get(a.of);
      if (of !== undefined) this.accepted.set(a.index, { ...of, index: a.index, idempotencyReplayed: true });
      else {
        const why = firstRejection.get(a.of);
        this.rejected.push({ index: a.index, recordId: a.recordId, error: why?.error ?? 'idempotency_conflict', details: why?.details ?? [] });
      }
    }
    const items = [...this.accepted.values()].sort((a, b) => a.index - b.index);
    const rejected = [...this.rejected].sort((a, b) => a.index - b.index);
    if (items.length === 0) {
      const allForbidden = rejected.length > 0 && rejected.every((r) => r.error === 'forbidden_tenant' || r.error === 'forbidden_client');
      throw new DrisError(allForbidden ? 'forbidden_tenant' : 'validation_failed', 'no record of the bulk request was accepted', {
        fields: this.rejectedFields,
        extra: { rejected },
      });
    }
    return { outcome: 'accepted', body: { total, accepted: items.length, items, rejected } };
  }
}

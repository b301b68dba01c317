import { createHash } from 'node:crypto';
import { randomHex } from '../util/random.js';
import type { Logger } from '../util/logger.js';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import type { BodyShape, PreparedBody, PreparedPayload } from '../domain/hashing/port.js';
import type { IdempotencyStore } from '../domain/limits/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { HASH_SCHEME, type OutgoingRecord, type BulkIngestResponse, type IngestRecordResponse, type RecordEnvelope } from '../domain/records/types.js';
import { newIngestId } from '../domain/records/ids.js';
import { assertTenant, type Principal } from './authenticator.js';
import { validateBulkEnvelope, validateIngestRecord } from './validators.js';
import { RequestClaims, type ClaimOutcome } from './idempotency-claims.js';
import { answerOf, messageIdOf, noteText, recordFingerprint, STORED_ACCEPTED, type Candidate, type IngestOutcome } from './ingest-messages.js';
import { BulkIngestion, MAX_BULK_ITEMS } from './bulk-ingest.js';
import { NO_EVENTS, type EventPublisher } from './events.js';

/** What ingestion needs of the hashing engine (HashingService implements it). */
export interface RecordHasher {
  /** A value, not a promise, when the work was done inline: the caller then waits for nothing. */
  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody | Promise<PreparedBody>;
  /** Reads the envelope members of each item only (a record may stand for its envelope). */
  recordHashes(envelopes: readonly RecordEnvelope[]): string[] | Promise<string[]>;
}

export type { IngestOutcome };

export interface IngestDeps {
  readonly hasher: RecordHasher;
  readonly queue: RecordQueue;
  readonly idempotency: IdempotencyStore;
  readonly idempotencyTtlMs: number;
  /** Length of a pending idempotency lease, renewed while its request works; default 10 s. */
  readonly idempotencyLeaseMs?: number;
  readonly now?: () => number;
  /** How long a request waits for a concurrent request holding the same idempotency key; default lease + 1 s. */
  readonly idempotencyWaitMs?: number;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
  /** RecordsAccepted, one event per request answered 202. */
  readonly events?: EventPublisher;
}

export { MAX_BULK_ITEMS };

function syntaxError(prepared: PreparedBody): DrisError {
  return new DrisError('invalid_json', 'the body is not valid JSON', { fields: prepared.errors });
}

/** Splits I-JSON violations by the bulk item they fall in; those outside every item reject the body. */
function violationsByItem(errors: readonly FieldError[], arrayName: string): { outer: FieldError[]; items: Map<number, FieldError[]> } {
  const outer: FieldError[] = [];
  const items = new Map<number, FieldError[]>();
  const re = new RegExp(`^${arrayName}\\[(\\d+)\\]`);
  for (const e of errors) {
    const m = re.exec(e.path);
    if (m?.[1] === undefined) {
      outer.push(e);
      continue;
    }
    const i = Number(m[1]);
    const list = items.get(i) ?? [];
    list.push(e);
    items.set(i, list);
  }
  return { outer, items };
}

/**
 * Ingestion: validate, hash, make durable, answer. A record is acknowledged (202) only after the
 * queue has stored it; idempotency keys make a retried request return the original answer. A keyed
 * record is published under a message id derived from its key, so even a retry that finds no
 * answer stored (a crash between the queue's write and the answer's, an indeterminate publish
 * failure) is answered from the record stored first rather than stored twice.
 */
export class IngestService {
  private readonly now: () => number;
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly events: EventPublisher;

  constructor(private readonly deps: IngestDeps) {
    this.now = deps.now ?? Date.now;
    this.events = deps.events ?? NO_EVENTS;
    this.leaseMs = deps.idempotencyLeaseMs ?? 10_000;
    // Long enough to see the lease of a request that died end, and take the key over.
    this.waitMs = deps.idempotencyWaitMs ?? this.leaseMs + 1000;
  }

  /** Validates one decoded record; returns its candidate or the field errors (paths under `prefix`). */
  private candidate(
    principal: Principal,
    value: unknown,
    payload: PreparedPayload | null | undefined,
    payloadErrors: readonly FieldError[],
    index: number,
    prefix: string,
  ): { ok: true; candidate: Candidate } | { ok: false; error: DrisError; recordId: string | null } {
    const recordId = typeof value === 'object' && value !== null && typeof (value as { recordId?: unknown }).recordId === 'string' ? (value as { recordId: string }).recordId : null;
    const checked = validateIngestRecord(value, prefix);
    if (!checked.ok || payloadErrors.length > 0) {
      const fields: FieldError[] = [...payloadErrors];
      if (!checked.ok) fields.push(...checked.errors.filter((f) => !payloadErrors.some((p) => p.path.startsWith(f.path))));
      return { ok: false, error: new DrisError('validation_failed', 'the record is invalid', { fields }), recordId };
    }
    const req = checked.value;
    if (!principal.tenants.has(req.tenantId)) {
      return { ok: false, error: new DrisError('forbidden_tenant', 'the API key may not act for this tenant'), recordId };
    }
    if (req.clientId !== undefined && req.clientId !== principal.clientId) {
      return { ok: false, error: new DrisError('forbidden_client', 'the API key belongs to another client'), recordId };
    }
    if (payload === null || payload === undefined) {
      return {
        ok: false,
        error: new DrisError('validation_failed', 'the record is invalid', { fields: [{ path: `${prefix}recordPayload`, code: 'invalid_type', message: 'must be an object' }] }),
        recordId,
      };
    }
    const norm: Candidate['req'] = {
      tenantId: req.tenantId,
      clientId: principal.clientId,
      database: req.database,
      collection: req.collection,
      recordId: req.recordId,
      recordVersion: req.recordVersion ?? '1',
      operationType: req.operationType ?? 'upsert',
      recordPayload: req.recordPayload,
      sourceTimestamp: req.sourceTimestamp ?? null,
    };
    return { ok: true, candidate: new ValidCandidate(index, norm, payload, req.idempotencyKey ?? null) };
  }

  /** One event per request: nothing is allocated when nobody listens. */
  private accepted(kind: 'single' | 'bulk', tenantId: string | null, count: number, replayed: number): void {
    if (this.events.wants('RecordsAccepted')) this.events.publish({ type: 'RecordsAccepted', kind, tenantId, count, replayed, atMs: this.now() });
  }

  private idemKey(tenantId: string, key: string): string {
    return `idem:${tenantId}:${key}`;
  }

  private claims(): RequestClaims {
    return new RequestClaims(this.deps.idempotency, { leaseMs: this.leaseMs, waitMs: this.waitMs, ttlMs: this.deps.idempotencyTtlMs, ...(this.deps.logger === undefined ? {} : { logger: this.deps.logger }) });
  }

  /**
   * The records of these candidates, hashed, with their salts, ids and acceptance time. Each
   * record is one object written out member by member (it stands for its own envelope when
   * hashed); without a promise when the hasher answered inline.
   */
  private build(principal: Principal, candidates: readonly Candidate[], correlationId: string, key?: string): OutgoingRecord[] | Promise<OutgoingRecord[]> {
    const acceptedAtMs = this.now();
    const acceptedAt = new Date(acceptedAtMs).toISOString();
    const records = new Array<OutgoingRecord>(candidates.length);
    for (let i = 0; i < candidates.length; i++) {
      const c = candidates[i] as Candidate;
      const r = c.req;
      records[i] = {
        hashScheme: HASH_SCHEME,
        tenantId: r.tenantId,
        database: r.database,
        collection: r.collection,
        recordId: r.recordId,
        recordVersion: r.recordVersion,
        operationType: r.operationType,
        sourceTimestamp: r.sourceTimestamp,
        payloadHash: c.payload.payloadHash,
        salt: randomHex(16),
        ingestId: newIngestId(acceptedAtMs),
        clientId: r.clientId,
        keyId: principal.keyId,
        recordHash: '',
        acceptedAt,
        payloadBytes: c.payload.canonicalBytes ?? Buffer.from(c.payload.canonical, 'utf8'),
        idempotencyKey: key ?? c.idempotencyKey,
        correlationId,
      };
    }
    const hashes = this.deps.hasher.recordHashes(records);
    return hashes instanceof Promise ? hashes.then((h) => withHashes(records, h)) : withHashes(records, hashes);
  }

  async ingestOne(principal: Principal, body: Uint8Array, headerKey: string | undefined, correlationId: string): Promise<IngestOutcome<IngestRecordResponse>> {
    const preparing = this.deps.hasher.prepareBody(body, 'single');
    const prepared = preparing instanceof Promise ? await preparing : preparing;
    // The envelope, not the value: payload objects stay in the backend until they are stored.
    const envelope = prepared.envelope;
    if (envelope === undefined) throw syntaxError(prepared);
    const c = this.candidate(principal, envelope, prepared.payloads[0], prepared.errors, 0, '');
    if (!c.ok) throw c.error;
    const cand = c.candidate;
    if (headerKey !== undefined && cand.idempotencyKey !== null && headerKey !== cand.idempotencyKey) {
      throw new DrisError('validation_failed', 'the idempotency keys differ', {
        fields: [{ path: 'idempotencyKey', code: 'mismatch', message: 'differs from the Idempotency-Key header' }],
      });
    }
    const idem = headerKey ?? cand.idempotencyKey;
    if (idem === null) {
      const building = this.build(principal, [cand], correlationId);
      const [rec] = (building instanceof Promise ? await building : building) as [OutgoingRecord];
      await this.deps.queue.publish([rec]);
      this.accepted('single', rec.tenantId, 1, 0);
      return { outcome: 'accepted', body: answerOf(rec) };
    }
    const key = this.idemKey(cand.req.tenantId, idem);
    const fingerprint = cand.fingerprint();
    const claims = this.claims();
    try {
      const [claimed] = (await claims.claim([{ key, fingerprint }])) as [ClaimOutcome];
      if (claimed.kind === 'replay') {
        this.accepted('single', cand.req.tenantId, 0, 1);
        return { outcome: 'accepted', body: { ...(JSON.parse(claimed.body) as IngestRecordResponse), idempotencyReplayed: true } };
      }
      if (claimed.kind !== 'owned') throw claimError(claimed.kind);
      const [rec] = (await this.build(principal, [cand], correlationId, idem)) as [OutgoingRecord];
      // Under the key's own message id: a retry of this request, whatever happened to this one,
      // finds this record instead of storing a second.
      const published = await this.deps.queue.publish([rec], { msgId: messageIdOf(key), note: noteText({ k: key }) });
      const stored = published.duplicate ? published.records[0] : rec;
      if (stored === undefined) throw new DrisError('internal_error', 'a duplicate message without records');
      const storedFingerprint = published.duplicate ? recordFingerprint(stored) : fingerprint;
      const answer = answerOf(stored);
      await claims.complete(key, { state: 'done', fingerprint: storedFingerprint, status: STORED_ACCEPTED, body: JSON.stringify(answer) });
      if (storedFingerprint !== fingerprint) throw claimError('conflict');
      this.accepted('single', stored.tenantId, published.duplicate ? 0 : 1, published.duplicate ? 1 : 0);
      return { outcome: 'accepted', body: { ...answer, idempotencyReplayed: published.duplicate } };
    } finally {
      await claims.end();
    }
  }

  async ingestBulk(principal: Principal, body: Uint8Array, headerKey: string | undefined, correlationId: string): Promise<IngestOutcome<BulkIngestResponse>> {
    // Taken before hashing: a pooled hasher transfers the body to a worker, detaching it here.
    const bodyFingerprint = headerKey === undefined ? '' : createHash('sha256').update(body).digest('hex');
    const preparing = this.deps.hasher.prepareBody(body, 'bulk');
    const prepared = preparing instanceof Promise ? await preparing : preparing;
    const envelope = prepared.envelope;
    if (envelope === undefined) throw syntaxError(prepared);
    const shape = validateBulkEnvelope(envelope, MAX_BULK_ITEMS);
    if (!shape.ok) throw new DrisError('validation_failed', 'the bulk request is invalid', { fields: shape.errors });
    const { form, tenantId, items } = shape;
    const arrayName = form === 'A' ? 'records' : 'items';
    const { outer, items: itemViolations } = violationsByItem(prepared.errors, arrayName);
    if (outer.length > 0) throw new DrisError('validation_failed', 'the bulk request is invalid', { fields: outer });
    if (tenantId !== null) assertTenant(principal, tenantId);

    // The whole request under one key: its answer is replayed as a whole.
    const requestKey = headerKey === undefined ? null : this.idemKey(tenantId ?? principal.tenantId, `bulk:${headerKey}`);
    const claims = this.claims();
    try {
      if (requestKey !== null) {
        const [claimed] = (await claims.claim([{ key: requestKey, fingerprint: bodyFingerprint }])) as [ClaimOutcome];
        if (claimed.kind === 'replay') {
          const replayed = JSON.parse(claimed.body) as BulkIngestResponse;
          this.accepted('bulk', tenantId, 0, replayed.accepted);
          return { outcome: 'accepted', body: replayed };
        }
        if (claimed.kind !== 'owned') throw claimError(claimed.kind);
      }
      const bulk = new BulkIngestion({
        queue: this.deps.queue,
        claims,
        build: (cands) => this.build(principal, cands, correlationId),
        idemKey: (t, k) => this.idemKey(t, k),
        request: requestKey === null ? null : { key: requestKey, fingerprint: bodyFingerprint },
        arrayName,
      });
      for (let i = 0; i < items.length; i++) {
        const value = items[i];
        // Form A names the tenant once; its records inherit it and may not name another.
        // The item is this request's own parse of the body: given the member in place rather
        // than copied (every item takes the same shape transition).
        if (form === 'A' && typeof value === 'object' && value !== null && !Array.isArray(value) && !('tenantId' in value)) {
          (value as { tenantId?: unknown }).tenantId = tenantId;
        }
        const c = this.candidate(principal, value, prepared.payloads[i], itemViolations.get(i) ?? [], i, `${arrayName}[${i}].`);
        if (!c.ok) bulk.reject(i, c.recordId, c.error);
        else if (form === 'A' && c.candidate.req.tenantId !== tenantId) {
          bulk.reject(i, c.candidate.req.recordId, new DrisError('validation_failed', 'the record names another tenant', {
            fields: [{ path: `${arrayName}[${i}].tenantId`, code: 'tenant_mismatch', message: 'must equal the request tenantId' }],
          }));
        } else bulk.add(c.candidate);
      }
      const outcome = await bulk.run(items.length);
      if (requestKey !== null) await claims.complete(requestKey, { state: 'done', fingerprint: bodyFingerprint, status: STORED_ACCEPTED, body: JSON.stringify(outcome.body) });
      if (this.events.wants('RecordsAccepted')) {
        let replayed = 0;
        for (const item of outcome.body.items) if (item.idempotencyReplayed) replayed += 1;
        this.accepted('bulk', tenantId, outcome.body.accepted - replayed, replayed);
      }
      return outcome;
    } finally {
      await claims.end();
    }
  }
}

function withHashes(records: OutgoingRecord[], hashes: readonly string[]): OutgoingRecord[] {
  for (let i = 0; i < records.length; i++) (records[i] as { recordHash: string }).recordHash = hashes[i] as string;
  return records;
}

/**
 * A validated item. A class rather than a literal with a closure: the fingerprint, needed only
 * for records with a key, is memoised on the instance, and a bulk request makes a thousand.
 */
class ValidCandidate implements Candidate {
  private memo: string | undefined;

  constructor(
    readonly index: number,
    readonly req: Candidate['req'],
    readonly payload: PreparedPayload,
    readonly idempotencyKey: string | null,
  ) {}

  /** The same function as for a stored record: a duplicate found in the queue is compared with it. */
  fingerprint(): string {
    return (this.memo ??= recordFingerprint({ ...this.req, payloadHash: this.payload.payloadHash }));
  }
}

export function claimError(kind: 'conflict' | 'in_progress'): DrisError {
  return kind === 'conflict'
    ? new DrisError('idempotency_conflict', 'the idempotency key was used for a different request')
    : new DrisError('idempotency_in_progress', 'a request with this idempotency key is still in progress');
}

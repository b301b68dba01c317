import { createHash } from 'node:crypto';
import { randomHex } from '../util/random.js';
import { DrisError, errorBody, type FieldError } from '../errors/dris-error.js';
import type { BodyShape, PreparedBody, PreparedPayload } from '../domain/hashing/port.js';
import type { IdempotencyStore } from '../domain/limits/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import {
  HASH_SCHEME,
  type OutgoingRecord,
  type BulkIngestResponse,
  type BulkItemAccepted,
  type BulkItemRejected,
  type IngestRecordRequest,
  type IngestRecordResponse,
  type RecordEnvelope,
} from '../domain/records/types.js';
import { newIngestId } from '../domain/records/ids.js';
import { assertTenant, type Principal } from './authenticator.js';
import { validateBulkEnvelope, validateIngestRecord } from './validators.js';

/** What ingestion needs of the hashing engine (HashingService implements it). */
export interface RecordHasher {
  prepareBody(body: Uint8Array, shape: BodyShape): Promise<PreparedBody>;
  recordHashes(envelopes: readonly RecordEnvelope[]): Promise<string[]>;
}

export interface IngestOutcome<T> {
  readonly status: number;
  readonly body: T;
}

export interface IngestDeps {
  readonly hasher: RecordHasher;
  readonly queue: RecordQueue;
  readonly idempotency: IdempotencyStore;
  readonly idempotencyTtlMs: number;
  readonly now?: () => number;
  /** How long a request waits for a concurrent request holding the same idempotency key. */
  readonly idempotencyWaitMs?: number;
}

export const MAX_BULK_ITEMS = 1000;

/** A validated item ready to be hashed and queued. */
interface Candidate {
  readonly index: number;
  readonly req: Required<Omit<IngestRecordRequest, 'idempotencyKey' | 'sourceTimestamp' | 'clientId'>> & {
    clientId: string;
    sourceTimestamp: string | null;
  };
  readonly payload: PreparedPayload;
  readonly idempotencyKey: string | null;
  /** What an idempotency key is bound to; computed only for records that carry a key. */
  readonly fingerprint: () => string;
}

function fingerprintOf(parts: readonly (string | null)[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

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
 * queue has stored it; idempotency keys make a retried request return the original answer.
 */
export class IngestService {
  private readonly now: () => number;
  private readonly waitMs: number;

  constructor(private readonly deps: IngestDeps) {
    this.now = deps.now ?? Date.now;
    this.waitMs = deps.idempotencyWaitMs ?? 10_000;
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
    const fields: FieldError[] = [...payloadErrors];
    const checked = validateIngestRecord(value, prefix);
    if (!checked.ok) fields.push(...checked.errors.filter((f) => !payloadErrors.some((p) => p.path.startsWith(f.path))));
    if (fields.length > 0 || !checked.ok) return { ok: false, error: new DrisError('validation_failed', 'the record is invalid', { fields }), recordId };
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
    let memo: string | undefined;
    const fingerprint = (): string =>
      (memo ??= fingerprintOf([
        norm.tenantId,
        norm.clientId,
        norm.database,
        norm.collection,
        norm.recordId,
        norm.recordVersion,
        norm.operationType,
        norm.sourceTimestamp,
        payload.payloadHash,
      ]));
    return { ok: true, candidate: { index, req: norm, payload, idempotencyKey: req.idempotencyKey ?? null, fingerprint } };
  }

  private idemKey(tenantId: string, key: string): string {
    return `idem:${tenantId}:${key}`;
  }

  /**
   * Claims an idempotency key. Returns null when this request owns it, or the stored answer to
   * replay; a different request under the same key is a conflict (409).
   */
  private async claim(key: string, fingerprint: string): Promise<{ status: number; body: string } | null> {
    const deadline = this.now() + this.waitMs;
    for (;;) {
      const r = await this.deps.idempotency.reserve(key, fingerprint, this.deps.idempotencyTtlMs);
      if (r.reserved) return null;
      if (r.entry.fingerprint !== fingerprint) throw new DrisError('idempotency_conflict', 'the idempotency key was used for a different request');
      if (r.entry.state === 'done') return { status: r.entry.status, body: r.entry.body };
      // Same request in flight elsewhere: wait for its answer rather than accept it twice.
      if (this.now() >= deadline) throw new DrisError('idempotency_in_progress', 'a request with this idempotency key is still in progress');
      await new Promise((res) => setTimeout(res, 15));
    }
  }

  private async accept(principal: Principal, candidates: readonly Candidate[], correlationId: string): Promise<OutgoingRecord[]> {
    const acceptedAtMs = this.now();
    const acceptedAt = new Date(acceptedAtMs).toISOString();
    const envelopes: RecordEnvelope[] = candidates.map((c) => ({
      hashScheme: HASH_SCHEME,
      tenantId: c.req.tenantId,
      database: c.req.database,
      collection: c.req.collection,
      recordId: c.req.recordId,
      recordVersion: c.req.recordVersion,
      operationType: c.req.operationType,
      sourceTimestamp: c.req.sourceTimestamp,
      payloadHash: c.payload.payloadHash,
      salt: randomHex(16),
    }));
    const hashes = await this.deps.hasher.recordHashes(envelopes);
    const records = new Array<OutgoingRecord>(envelopes.length);
    for (let i = 0; i < envelopes.length; i++) {
      const env = envelopes[i] as RecordEnvelope;
      const c = candidates[i] as Candidate;
      records[i] = {
        hashScheme: env.hashScheme,
        tenantId: env.tenantId,
        database: env.database,
        collection: env.collection,
        recordId: env.recordId,
        recordVersion: env.recordVersion,
        operationType: env.operationType,
        sourceTimestamp: env.sourceTimestamp,
        payloadHash: env.payloadHash,
        salt: env.salt,
        ingestId: newIngestId(acceptedAtMs),
        clientId: c.req.clientId,
        keyId: principal.keyId,
        recordHash: hashes[i] as string,
        acceptedAt,
        payloadBytes: c.payload.canonicalBytes ?? Buffer.from(c.payload.canonical, 'utf8'),
        idempotencyKey: c.idempotencyKey,
        correlationId,
      };
    }
    await this.deps.queue.publish(records);
    return records;
  }

  async ingestOne(principal: Principal, body: Uint8Array, headerKey: string | undefined, correlationId: string): Promise<IngestOutcome<IngestRecordResponse>> {
    const prepared = await this.deps.hasher.prepareBody(body, 'single');
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
    const key = idem === null ? null : this.idemKey(cand.req.tenantId, idem);
    if (key !== null) {
      const replay = await this.claim(key, cand.fingerprint());
      if (replay !== null) return { status: replay.status, body: { ...(JSON.parse(replay.body) as IngestRecordResponse), idempotencyReplayed: true } };
    }
    let rec: OutgoingRecord;
    try {
      [rec] = (await this.accept(principal, [{ ...cand, idempotencyKey: idem }], correlationId)) as [OutgoingRecord];
    } catch (err) {
      if (key !== null) await this.deps.idempotency.release(key, cand.fingerprint());
      throw err;
    }
    const answer: IngestRecordResponse = {
      recordId: rec.recordId,
      recordHash: rec.recordHash,
      tenantId: rec.tenantId,
      acceptedAt: rec.acceptedAt,
      idempotencyReplayed: false,
      payloadHash: rec.payloadHash,
      salt: rec.salt,
      hashScheme: HASH_SCHEME,
      ingestId: rec.ingestId,
    };
    if (key !== null) await this.deps.idempotency.complete(key, { state: 'done', fingerprint: cand.fingerprint(), status: 202, body: JSON.stringify(answer) }, this.deps.idempotencyTtlMs);
    return { status: 202, body: answer };
  }

  async ingestBulk(principal: Principal, body: Uint8Array, headerKey: string | undefined, correlationId: string): Promise<IngestOutcome<BulkIngestResponse>> {
    // Taken before hashing: a pooled hasher transfers the body to a worker, detaching it here.
    const bodyFingerprint = headerKey === undefined ? '' : createHash('sha256').update(body).digest('hex');
    const prepared = await this.deps.hasher.prepareBody(body, 'bulk');
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
    const requestFingerprint = bodyFingerprint;
    if (requestKey !== null) {
      const replay = await this.claim(requestKey, requestFingerprint);
      if (replay !== null) return { status: replay.status, body: JSON.parse(replay.body) as BulkIngestResponse };
    }
    try {
      const outcome = await this.bulkItems(principal, items, prepared, itemViolations, form, tenantId, arrayName, correlationId);
      if (requestKey !== null) {
        await this.deps.idempotency.complete(requestKey, { state: 'done', fingerprint: requestFingerprint, status: outcome.status, body: JSON.stringify(outcome.body) }, this.deps.idempotencyTtlMs);
      }
      return outcome;
    } catch (err) {
      if (requestKey !== null) await this.deps.idempotency.release(requestKey, requestFingerprint);
      throw err;
    }
  }

  private async bulkItems(
    principal: Principal,
    items: readonly unknown[],
    prepared: PreparedBody,
    itemViolations: ReadonlyMap<number, FieldError[]>,
    form: 'A' | 'B',
    tenantId: string | null,
    arrayName: string,
    correlationId: string,
  ): Promise<IngestOutcome<BulkIngestResponse>> {
    const rejected: BulkItemRejected[] = [];
    const replayed: BulkItemAccepted[] = [];
    const fresh: Candidate[] = [];
    const claimed: { key: string; fingerprint: string }[] = [];
    const rejectedFields: FieldError[] = [];
    const reject = (index: number, recordId: string | null, err: DrisError): void => {
      const b = errorBody(err);
      rejected.push({ index, recordId, error: b.error, details: b.details });
      rejectedFields.push(...(err.fields.length > 0 ? err.fields : [{ path: `${arrayName}[${index}]`, code: err.code, message: err.message }]));
    };

    for (let i = 0; i < items.length; i++) {
      let value = items[i];
      // Form A names the tenant once; its records inherit it and may not name another.
      if (form === 'A' && typeof value === 'object' && value !== null && !Array.isArray(value) && !('tenantId' in value)) {
        value = { ...value, tenantId };
      }
      const c = this.candidate(principal, value, prepared.payloads[i], itemViolations.get(i) ?? [], i, `${arrayName}[${i}].`);
      if (!c.ok) {
        reject(i, c.recordId, c.error);
        continue;
      }
      if (form === 'A' && c.candidate.req.tenantId !== tenantId) {
        reject(i, c.candidate.req.recordId, new DrisError('validation_failed', 'the record names another tenant', {
          fields: [{ path: `${arrayName}[${i}].tenantId`, code: 'tenant_mismatch', message: 'must equal the request tenantId' }],
        }));
        continue;
      }
      const cand = c.candidate;
      if (cand.idempotencyKey !== null) {
        const key = this.idemKey(cand.req.tenantId, cand.idempotencyKey);
        try {
          const replay = await this.claim(key, cand.fingerprint());
          if (replay !== null) {
            const prev = JSON.parse(replay.body) as IngestRecordResponse;
            replayed.push({
              index: i,
              recordId: prev.recordId,
              recordHash: prev.recordHash,
              tenantId: prev.tenantId,
              acceptedAt: prev.acceptedAt,
              payloadHash: prev.payloadHash,
              salt: prev.salt,
              ingestId: prev.ingestId,
              idempotencyReplayed: true,
            });
            continue;
          }
          claimed.push({ key, fingerprint: cand.fingerprint() });
        } catch (err) {
          if (err instanceof DrisError && (err.code === 'idempotency_conflict' || err.code === 'idempotency_in_progress')) {
            reject(i, cand.req.recordId, err);
            continue;
          }
          throw err;
        }
      }
      fresh.push(cand);
    }

    let records: OutgoingRecord[] = [];
    if (fresh.length > 0) {
      try {
        records = await this.accept(principal, fresh, correlationId);
      } catch (err) {
        await Promise.all(claimed.map((c) => this.deps.idempotency.release(c.key, c.fingerprint)));
        throw err;
      }
    }
    const acceptedItems: BulkItemAccepted[] = records.map((r, k) => ({
      index: (fresh[k] as Candidate).index,
      recordId: r.recordId,
      recordHash: r.recordHash,
      tenantId: r.tenantId,
      acceptedAt: r.acceptedAt,
      payloadHash: r.payloadHash,
      salt: r.salt,
      ingestId: r.ingestId,
      idempotencyReplayed: false,
    }));
    await Promise.all(
      records.map((r) => {
        if (r.idempotencyKey === null) return Promise.resolve();
        const item = acceptedItems.find((a) => a.ingestId === r.ingestId) as BulkItemAccepted;
        const cand = fresh.find((f) => f.index === item.index) as Candidate;
        const single: IngestRecordResponse = {
          recordId: r.recordId,
          recordHash: r.recordHash,
          tenantId: r.tenantId,
          acceptedAt: r.acceptedAt,
          idempotencyReplayed: false,
          payloadHash: r.payloadHash,
          salt: r.salt,
          hashScheme: HASH_SCHEME,
          ingestId: r.ingestId,
        };
        return this.deps.idempotency.complete(this.idemKey(r.tenantId, r.idempotencyKey), { state: 'done', fingerprint: cand.fingerprint(), status: 202, body: JSON.stringify(single) }, this.deps.idempotencyTtlMs);
      }),
    );
    const all = [...acceptedItems, ...replayed].sort((a, b) => a.index - b.index);
    rejected.sort((a, b) => a.index - b.index);
    if (all.length === 0) {
      const allForbidden = rejected.length > 0 && rejected.every((r) => r.error === 'forbidden_tenant' || r.error === 'forbidden_client');
      throw new DrisError(allForbidden ? 'forbidden_tenant' : 'validation_failed', 'no record of the bulk request was accepted', {
        fields: rejectedFields,
        extra: { rejected },
      });
    }
    return { status: 202, body: { total: items.length, accepted: all.length, items: all, rejected } };
  }
}

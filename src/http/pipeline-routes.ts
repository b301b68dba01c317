import { randomBytes } from 'node:crypto';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import type { AuditLog } from '../domain/audit/ports.js';
import { assertTenant } from '../app/authenticator.js';
import { requeueFailedSnapshot, type Anchorer } from '../app/anchorer.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch, Snapshot, SnapshotStatus } from '../domain/pipeline/types.js';
import type { RequestContext, Route } from './router.js';
import type { EvidenceAccess, WithheldRecord } from '../app/evidence-access.js';
import { withholdTimelineEntry } from '../domain/evidence/withhold.js';
import { limitOf, principalOf, tenantsOf } from './params.js';

/**
 * Status and lifecycle endpoints. Every read is scoped to the key's tenants: a snapshot or batch of
 * another tenant answers 404, exactly as an unknown one, so identifiers reveal nothing.
 */

const STATUSES: readonly SnapshotStatus[] = ['PendingAnchor', 'Batched', 'Anchored', 'Failed'];
const iso = (ms: number | null): string | undefined => (ms === null ? undefined : new Date(ms).toISOString());

export function snapshotView(s: Snapshot): Record<string, unknown> {
  const v: Record<string, unknown> = {
    snapshotId: s.snapshotId,
    tenantId: s.tenantId,
    status: s.status,
    recordIds: s.recordIds,
    recordCount: s.recordCount,
    snapshotHash: s.snapshotHash,
    batchId: s.batchId,
    onChainConfirmed: s.onChainConfirmed,
    createdAt: iso(s.createdAtMs),
  };
  if (s.merkleRoot !== null) v['merkleRoot'] = s.merkleRoot;
  if (s.anchorTimestampMs !== null) v['anchorTimestamp'] = iso(s.anchorTimestampMs);
  if (s.chainTxHash !== null) v['chainTxHash'] = s.chainTxHash;
  return v;
}

export interface PipelineRouteDeps {
  readonly store: PipelineStore;
  readonly anchorer: Anchorer | null;
  readonly maxBodyBytes: number;
  /** Where retries are recorded. */
  readonly audit: AuditLog | null;
  /** Retrieval policies: what of a record's evidence the timeline may show this caller. */
  readonly evidence: EvidenceAccess;
}

export function pipelineRoutes(deps: PipelineRouteDeps): Route[] {
  const findSnapshot = async (ctx: RequestContext): Promise<Snapshot> => {
    const id = ctx.params['snapshotId'] ?? '';
    for (const tenant of tenantsOf(ctx)) {
      const s = await deps.store.getSnapshot(tenant, id);
      if (s !== null) return s;
    }
    throw new DrisError('not_found', 'no such snapshot');
  };

  return [
    {
      method: 'GET',
      pattern: '/api/v1/snapshots',
      operationId: 'ListSnapshots',
      auth: 'apiKey',
      handle: async (ctx) => {
        const fields: FieldError[] = [];
        const limit = limitOf(ctx.query, fields);
        const status = ctx.query.get('status');
        if (status !== null && !STATUSES.includes(status as SnapshotStatus)) fields.push({ path: 'status', code: 'invalid_enum', message: `must be one of ${STATUSES.join(', ')}` });
        if (fields.length > 0) throw new DrisError('validation_failed', 'invalid query', { fields });
        const p = principalOf(ctx);
        const named = ctx.query.get('tenantId');
        const tenantId = named === null || named === '' ? p.tenantId : named;
        assertTenant(p, tenantId);
        const q: { tenantId: string; limit: number; recordId?: string; status?: string; cursor?: string } = { tenantId, limit };
        const recordId = ctx.query.get('recordId');
        const cursor = ctx.query.get('cursor');
        if (recordId !== null && recordId !== '') q.recordId = recordId;
        if (status !== null) q.status = status;
        if (cursor !== null && cursor !== '') q.cursor = cursor;
        const page = await deps.store.listSnapshots(q);
        return { status: 200, body: { items: page.items.map(snapshotView), nextCursor: page.nextCursor } };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/snapshots/:snapshotId',
      operationId: 'GetSnapshot',
      auth: 'apiKey',
      handle: async (ctx) => ({ status: 200, body: snapshotView(await findSnapshot(ctx)) }),
    },
    {
      method: 'GET',
      pattern: '/api/v1/snapshots/:snapshotId/lifecycle',
      operationId: 'GetSnapshotLifecycle',
      auth: 'apiKey',
      handle: async (ctx) => {
        const s = await findSnapshot(ctx);
        const entries = await deps.store.lifecycleOf(s.tenantId, s.snapshotId);
        return {
          status: 200,
          body: { snapshotId: s.snapshotId, status: s.status, items: entries.map((e) => ({ state: e.state, at: iso(e.atMs), reason: e.reason, attempt: e.attempt })) },
        };
      },
    },
    {
      method: 'POST',
      pattern: '/api/v1/snapshots/:snapshotId/retry',
      operationId: 'RetrySnapshot',
      auth: 'apiKey',
      maxBodyBytes: deps.maxBodyBytes,
      handle: async (ctx) => {
        const s = await findSnapshot(ctx);
        // A process without the anchorer role writes the request to the store, where the leader finds it.
        const after = deps.anchorer === null ? (await requeueFailedSnapshot(deps.store, s.tenantId, s.snapshotId)).snapshot : await deps.anchorer.retry(s.tenantId, s.snapshotId);
        const p = principalOf(ctx);
        await deps.audit?.append([
          {
            eventId: `retry_${randomBytes(10).toString('hex')}`,
            atMs: Date.now(),
            tenantId: s.tenantId,
            clientId: p.clientId,
            keyId: p.keyId,
            action: 'snapshot.retry',
            resource: `snapshot:${s.snapshotId}`,
            outcome: 'accepted',
            correlationId: ctx.correlationId,
            detail: { batchId: after.batchId, status: after.status },
          },
        ]);
        return { status: 202, body: { ...snapshotView(after), message: 'snapshot re-queued for anchoring' } };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/batches/:batchId',
      operationId: 'GetBatch',
      auth: 'apiKey',
      handle: async (ctx) => {
        const batch = await deps.store.getBatch(ctx.params['batchId'] ?? '');
        const tenants = new Set(tenantsOf(ctx));
        if (batch === null || !batch.tenants.some((t) => tenants.has(t))) throw new DrisError('not_found', 'no such batch');
        const own = (await deps.store.snapshotsOfBatch(batch.batchId)).filter((s) => tenants.has(s.tenantId));
        return { status: 200, body: batchView(batch, own) };
      },
    },
    {
      method: 'GET',
      pattern: '/api/v1/timeline/record',
      operationId: 'GetRecordTimeline',
      auth: 'apiKey',
      handle: async (ctx) => {
        const q = ctx.query;
        const fields: FieldError[] = [];
        const collection = q.get('collection');
        const recordId = q.get('recordId');
        if (collection === null || collection === '') fields.push({ path: 'collection', code: 'required', message: 'is required' });
        if (recordId === null || recordId === '') fields.push({ path: 'recordId', code: 'required', message: 'is required' });
        if (fields.length > 0 || collection === null || recordId === null) throw new DrisError('validation_failed', 'invalid query', { fields });
        const filter: { collection: string; recordId: string; database?: string; recordVersion?: string } = { collection, recordId };
        const database = q.get('database');
        const recordVersion = q.get('recordVersion');
        if (database !== null && database !== '') filter.database = database;
        if (recordVersion !== null && recordVersion !== '') filter.recordVersion = recordVersion;
        const items: Record<string, unknown>[] = [];
        const p = principalOf(ctx);
        for (const tenant of tenantsOf(ctx)) {
          const traces = await deps.store.traceRecord(tenant, filter);
          if (traces.length === 0) continue;
          const gate = await deps.evidence.gate(p, tenant);
          const withheld: WithheldRecord[] = [];
          for (const trace of traces) {
            const events: Record<string, unknown>[] = [{ event: 'Accepted', at: iso(trace.acceptedAtMs), recordHash: trace.recordHash }];
            events.push({ event: 'Indexed', at: iso(trace.indexedAtMs) });
            let batch: Batch | null = null;
            if (trace.snapshotId !== null) {
              for (const e of await deps.store.lifecycleOf(tenant, trace.snapshotId)) {
                if (e.state === 'Ingested') continue;
                events.push({ event: e.state, at: iso(e.atMs), reason: e.reason, snapshotId: trace.snapshotId });
              }
              if (trace.batchId !== null) batch = await deps.store.getBatch(trace.batchId);
            }
            const anchored = events.findLast((e) => e['event'] === 'Anchored');
            if (anchored !== undefined && batch !== null && batch.status === 'Anchored') {
              Object.assign(anchored, { batchId: batch.batchId, batchSeq: batch.batchSeq, chainTxHash: batch.txHash, blockNumber: batch.blockNumber, ipfsCid: batch.manifestCid });
            }
            const entry: Record<string, unknown> = {
              ingestId: trace.ingestId,
              tenantId: trace.tenantId,
              database: trace.database,
              collection: trace.collection,
              recordId: trace.recordId,
              recordVersion: trace.recordVersion,
              recordHash: trace.recordHash,
              snapshotId: trace.snapshotId,
              batchId: trace.batchId,
              leafIndex: trace.leafIndex,
              treeSize: trace.treeSize,
              events,
            };
            if (gate(trace).allowed) items.push(entry);
            else {
              withheld.push(trace);
              items.push(withholdTimelineEntry(entry));
            }
          }
          await deps.evidence.reportWithheld({ principal: p, correlationId: ctx.correlationId }, tenant, 'timeline/record', withheld, 'policy');
        }
        if (items.length === 0) throw new DrisError('not_found', 'no such record');
        return { status: 200, body: { items } };
      },
    },
  ];
}

export function batchView(b: Batch, snapshots: readonly Snapshot[]): Record<string, unknown> {
  return {
    batchId: b.batchId,
    batchSeq: b.batchSeq,
    status: b.status,
    merkleRoot: b.merkleRoot,
    recordCount: b.treeSize,
    chainTxHash: b.txHash,
    ipfsCid: b.manifestCid,
    chainId: b.chainId,
    contractAddress: b.contractAddress,
    blockNumber: b.blockNumber,
    anchoredAt: iso(b.anchoredAtMs) ?? null,
    createdAt: iso(b.createdAtMs),
    attempts: b.attempts,
    lastError: b.lastError,
    previous: b.previous,
    manifestUrl: b.manifestCid === null ? null : `/ipfs/${b.manifestCid}`,
    snapshotIds: snapshots.map((s) => s.snapshotId),
  };
}

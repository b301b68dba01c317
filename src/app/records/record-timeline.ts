import { DrisError } from '../../errors/dris-error.js';
import { withholdTimelineEntry, type EvidenceGate } from '../../domain/evidence/withhold.js';
import type { PipelineStore, RecordTrace } from '../../domain/pipeline/ports.js';
import type { Batch } from '../../domain/pipeline/types.js';
import type { EvidenceAccess, WithheldRecord } from '../evidence-access.js';
import { readableTenants, type Caller } from '../tenancy.js';
import { iso, type TimelineEvent, type TimelineItem, type TimelineResponse } from '../views.js';

export interface RecordTimelineDeps {
  readonly store: PipelineStore;
  readonly policies: EvidenceAccess;
}

export interface TimelineLookup {
  readonly collection: string;
  readonly recordId: string;
  readonly database?: string | undefined;
  readonly recordVersion?: string | undefined;
  readonly tenantId?: string | undefined;
}

/**
 * The event history of a record, one item per accepted version, in the caller's tenants. A record
 * whose evidence the tenant's retrieval policy withholds keeps its events without the evidence.
 */
export async function recordTimeline(deps: RecordTimelineDeps, caller: Caller, q: TimelineLookup): Promise<TimelineResponse> {
  const filter = {
    collection: q.collection,
    recordId: q.recordId,
    ...(q.database === undefined ? {} : { database: q.database }),
    ...(q.recordVersion === undefined ? {} : { recordVersion: q.recordVersion }),
  };
  const items: TimelineItem[] = [];
  for (const tenant of readableTenants(caller.principal, q.tenantId)) {
    const traces = await deps.store.traceRecord(tenant, filter);
    if (traces.length === 0) continue;
    const gate: EvidenceGate = await deps.policies.gate(caller.principal, tenant);
    const withheld: WithheldRecord[] = [];
    for (const trace of traces) {
      const entry = await timelineItem(deps.store, tenant, trace);
      if (gate(trace).allowed) items.push(entry);
      else {
        withheld.push(trace);
        items.push(withholdTimelineEntry(entry as unknown as Record<string, unknown>) as unknown as TimelineItem);
      }
    }
    await deps.policies.reportWithheld(caller, tenant, 'timeline/record', withheld, 'policy');
  }
  if (items.length === 0) throw new DrisError('not_found', 'no such record');
  return { items };
}

async function timelineItem(store: PipelineStore, tenant: string, trace: RecordTrace): Promise<TimelineItem> {
  const events: TimelineEvent[] = [
    { event: 'Accepted', at: iso(trace.acceptedAtMs), recordHash: trace.recordHash },
    { event: 'Indexed', at: iso(trace.indexedAtMs) },
  ];
  let batch: Batch | null = null;
  if (trace.snapshotId !== null) {
    for (const e of await store.lifecycleOf(tenant, trace.snapshotId)) {
      if (e.state === 'Ingested') continue;
      events.push({ event: e.state, at: iso(e.atMs), reason: e.reason, snapshotId: trace.snapshotId });
    }
    if (trace.batchId !== null) batch = await store.getBatch(trace.batchId);
  }
  const anchored = events.findLast((e) => e.event === 'Anchored');
  if (anchored !== undefined && batch !== null && batch.status === 'Anchored') {
    Object.assign(anchored, { batchId: batch.batchId, batchSeq: batch.batchSeq, chainTxHash: batch.txHash, blockNumber: batch.blockNumber, ipfsCid: batch.manifestCid });
  }
  return {
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
}

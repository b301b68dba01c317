import t from 'tap';
import { EventBus } from '../../src/app/event-bus.js';
import type { DomainEvent } from '../../src/app/events.js';
import { subscribeMetrics } from '../../src/app/metrics.js';
import { PrometheusMetrics, type Role } from '../../src/adapters/prometheus/prometheus-metrics.js';
import type { Batch } from '../../src/domain/pipeline/types.js';
import { newIngestId } from '../../src/domain/records/ids.js';
import { parseExposition, type Exposition } from '../harness/prom-text.js';

/** The metrics subscriber over a real EventBus, writing to the real prom-client registry. */

function batch(batchId: string, ingestIds: readonly string[]): Batch {
  return {
    batchId,
    merkleRoot: 'ab'.repeat(32),
    batchSeq: null,
    createdAtMs: 0,
    status: 'Pending',
    treeSize: ingestIds.length,
    leaves: ingestIds.map(() => 'cd'.repeat(32)),
    ingestIds,
    tenants: ['acme'],
    manifestCid: null,
    previous: null,
    chainId: null,
    contractAddress: null,
    txHash: null,
    blockNumber: null,
    anchoredAtMs: null,
    attempts: 0,
    lastError: null,
  };
}

function anchored(batchId: string, records: number, firstAcceptedAtMs: number, anchoredAtMs: number, gas: { gasUsed: number; feeWei: string } | null): DomainEvent {
  return {
    type: 'BatchAnchored',
    batchId,
    batchSeq: 1,
    merkleRoot: 'ab'.repeat(32),
    txHash: null,
    blockNumber: null,
    records,
    snapshots: 1,
    createdAtMs: firstAcceptedAtMs,
    firstAcceptedAtMs,
    anchoredAtMs,
    epoch: 1,
    adopted: gas === null,
    gasUsed: gas?.gasUsed ?? null,
    feeWei: gas?.feeWei ?? null,
  };
}

async function deliver(roles: readonly Role[], events: readonly DomainEvent[]): Promise<{ metrics: PrometheusMetrics; x: Exposition }> {
  const bus = new EventBus();
  const metrics = new PrometheusMetrics(roles);
  subscribeMetrics(bus, metrics);
  for (const e of events) bus.publish(e);
  if (!(await bus.idle(5000))) throw new Error('events not delivered');
  return { metrics, x: parseExposition(await metrics.render()) };
}

const ALL: readonly Role[] = ['api', 'indexer', 'anchorer'];

void t.test('records accepted by kind, indexed, dead-lettered by consumer; replays are not accepted records', async (t) => {
  const { x } = await deliver(ALL, [
    { type: 'RecordsAccepted', kind: 'single', tenantId: 'acme', count: 1, replayed: 0, atMs: 1 },
    { type: 'RecordsAccepted', kind: 'single', tenantId: 'acme', count: 0, replayed: 1, atMs: 2 },
    { type: 'RecordsAccepted', kind: 'bulk', tenantId: null, count: 250, replayed: 3, atMs: 3 },
    { type: 'RecordsIndexed', consumer: 'indexer', count: 200, firstAcceptedAtMs: 1, atMs: 4 },
    { type: 'RecordsIndexed', consumer: 'indexer', count: 51, firstAcceptedAtMs: 2, atMs: 5 },
    { type: 'RecordsDeadLettered', consumer: 'indexer', count: 2, reason: 'index_refused' },
  ]);
  t.equal(x.types.get('dris_records_accepted_total'), 'counter');
  t.equal(x.value('dris_records_accepted_total', { kind: 'single' }), 1);
  t.equal(x.value('dris_records_accepted_total', { kind: 'bulk' }), 250);
  t.equal(x.value('dris_records_indexed_total'), 251);
  t.equal(x.value('dris_records_dead_lettered_total', { consumer: 'indexer' }), 2);
});

void t.test('batches formed, anchored and failed; 202 → Anchored per record; gas and fees', async (t) => {
  const base = 1_800_000_000_000;
  // Three records accepted 0, 10 and 20 s before the block; a batch formed elsewhere (adopted) of 4.
  const ids = [newIngestId(base - 20_000), newIngestId(base - 10_000), newIngestId(base)];
  const { x } = await deliver(ALL, [
    { type: 'BatchFormed', batches: [{ batch: batch('b1', ids), snapshots: [] }, { batch: batch('b2', [newIngestId(base)]), snapshots: [] }], atMs: base },
    anchored('b1', 3, base - 20_000, base + 40_000, { gasUsed: 51_000, feeWei: '51000000000000' }),
    anchored('b9', 4, base - 100_000, base + 200_000, null),
    { type: 'BatchFailed', batchId: 'b2', attempts: 6, code: 'dependency_unavailable' },
  ]);
  t.equal(x.value('dris_batches_formed_total'), 2);
  t.equal(x.value('dris_batches_anchored_total'), 2);
  t.equal(x.value('dris_batches_failed_total'), 1);
  t.equal(x.types.get('dris_ingest_to_anchored_seconds'), 'histogram');
  t.equal(x.value('dris_ingest_to_anchored_seconds_count'), 7, 'one observation per record');
  // b1: 60, 50, 40 s from each record's own acceptance; b9: 300 s each (its first record's, an upper bound).
  t.equal(x.value('dris_ingest_to_anchored_seconds_sum'), 60 + 50 + 40 + 4 * 300);
  t.equal(x.value('dris_ingest_to_anchored_seconds_bucket', { le: '30' }), 0);
  t.equal(x.value('dris_ingest_to_anchored_seconds_bucket', { le: '60' }), 3);
  t.equal(x.value('dris_ingest_to_anchored_seconds_bucket', { le: '300' }), 7);
  t.equal(x.value('dris_anchor_gas_used_count'), 1, 'an adopted batch paid no gas here');
  t.equal(x.value('dris_anchor_gas_used_sum'), 51_000);
  t.equal(x.value('dris_anchor_gas_used_bucket', { le: '60000' }), 1);
  t.equal(x.value('dris_anchor_fee_wei_total'), 51e12);
});

void t.test('leadership: leader, epoch and changes', async (t) => {
  const { metrics } = await deliver(ALL, [{ type: 'LeadershipChanged', leading: true, epoch: 7 }]);
  let x = parseExposition(await metrics.render());
  t.equal(x.value('dris_leader'), 1);
  t.equal(x.value('dris_leader_epoch'), 7);
  t.equal(x.value('dris_leadership_changes_total'), 1);
  metrics.leadership(false, 7);
  x = parseExposition(await metrics.render());
  t.equal(x.value('dris_leader'), 0);
  t.equal(x.value('dris_leader_epoch'), 7);
  t.equal(x.value('dris_leadership_changes_total'), 2);
});

void t.test('verifications by status', async (t) => {
  const v = (verificationStatus: 'pass' | 'fail' | 'pending' | 'error'): DomainEvent => ({
    type: 'VerificationPerformed',
    mode: 'stored',
    tenantId: 'acme',
    verified: verificationStatus === 'pass',
    verificationStatus,
    reasonCategory: verificationStatus === 'pass' ? 'full_match' : verificationStatus === 'fail' ? 'payload_mismatch' : verificationStatus === 'pending' ? 'pending_anchor' : 'chain_unavailable',
    durationMs: 3,
  });
  const { x } = await deliver(ALL, [v('pass'), v('pass'), v('fail'), v('pending'), v('error')]);
  t.equal(x.value('dris_verifications_total', { status: 'pass' }), 2);
  t.equal(x.value('dris_verifications_total', { status: 'fail' }), 1);
  t.equal(x.value('dris_verifications_total', { status: 'pending' }), 1);
  t.equal(x.value('dris_verifications_total', { status: 'error' }), 1);
});

void t.test('only the series of the roles a process runs; build info and default metrics in every one', async (t) => {
  const indexer = await deliver(['indexer'], [{ type: 'RecordsIndexed', consumer: 'indexer', count: 5, firstAcceptedAtMs: 1, atMs: 2 }]);
  t.equal(indexer.x.value('dris_records_indexed_total'), 5);
  t.same(indexer.x.find('dris_records_accepted_total'), [], 'no api series');
  t.same(indexer.x.find('dris_leader'), [], 'no anchorer series');
  t.equal(indexer.metrics.http, null, 'no HTTP series');
  const api = await deliver(['api'], []);
  t.same(api.x.find('dris_records_indexed_total'), []);
  t.same(api.x.find('dris_batches_formed_total'), []);
  t.not(api.metrics.http, null);
  api.metrics.buildInfo('1.2.3', ['api'], 'wasm');
  const x = parseExposition(await api.metrics.render());
  t.equal(x.value('dris_build_info', { version: '1.2.3', roles: 'api', hash_backend: 'wasm' }), 1);
  t.equal(x.types.get('process_cpu_seconds_total'), 'counter');
  t.equal(x.types.get('process_resident_memory_bytes'), 'gauge');
  t.ok(x.find('nodejs_eventloop_lag_p99_seconds').length === 1);
});

void t.test('HTTP answers by route, method and status; refusals by status and code; unknown methods folded', async (t) => {
  const m = new PrometheusMetrics(['api']);
  const http = m.http;
  if (http === null) throw new Error('no HTTP series');
  http.answered('IngestRecord', 'POST', 202, 0.003, 'c1', undefined);
  http.answered('IngestRecord', 'POST', 202, 0.02, 'c2', undefined);
  http.answered('IngestRecord', 'POST', 429, 0.001, 'c3', 'rate_limit_exceeded');
  http.answered('IngestRecord', 'POST', 503, 0.001, 'c4', 'overloaded');
  http.answered('GetHealth', 'GET', 503, 0.001, 'c5', undefined);
  http.answered('unmatched', 'BREW', 404, 0.0001, 'c6', 'route_not_found');
  m.indexQuery('records', 0.004);
  const x = parseExposition(await m.render());
  t.equal(x.value('dris_http_requests_total', { route: 'IngestRecord', method: 'POST', status: '202' }), 2);
  t.equal(x.value('dris_http_requests_total', { route: 'IngestRecord', method: 'POST', status: '429' }), 1);
  t.equal(x.value('dris_http_requests_total', { route: 'unmatched', method: 'OTHER', status: '404' }), 1);
  t.same(x.find('dris_http_requests_total', { method: 'BREW' }), []);
  t.equal(x.value('dris_http_request_duration_seconds_count', { route: 'IngestRecord', method: 'POST' }), 4);
  t.equal(x.value('dris_http_request_duration_seconds_bucket', { route: 'IngestRecord', method: 'POST', le: '0.005' }), 3);
  t.equal(x.value('dris_http_rejected_total', { status: '429', reason: 'rate_limit_exceeded' }), 1);
  t.equal(x.value('dris_http_rejected_total', { status: '503', reason: 'overloaded' }), 1);
  t.equal(x.find('dris_http_rejected_total').length, 2, 'a health report of 503 is not a refusal; a 404 neither');
  t.equal(x.value('dris_index_query_duration_seconds_count', { query: 'records' }), 1);
});

void t.test('gauges read at scrape: a failed or late reading leaves its series out, the others are there', async (t) => {
  const m = new PrometheusMetrics(['indexer', 'anchorer']);
  let lagCalls = 0;
  m.readings({
    queueLag: () => {
      lagCalls += 1;
      return Promise.resolve({ indexer: 14, accumulator: 3 });
    },
    queueBudget: () => ({ bytes: 1024, maxBytes: 4096 }),
    storageFreeBytes: () => Promise.reject(new Error('statfs failed')),
    openBatch: () => ({ records: 412, ageSeconds: 21.5 }),
    batchCounts: () => Promise.resolve({ Pending: 1, Anchored: 608, Failed: 0 }),
    // Never answers: the reading's deadline ends the wait.
    chainHeadLagSeconds: () => new Promise<number>(() => undefined),
    subscribers: () => [{ name: 'metrics', delivered: 10, dropped: 2, failed: 0, queued: 0 }],
  });
  const x = parseExposition(await m.render());
  t.equal(lagCalls, 1);
  t.equal(x.value('dris_queue_lag_messages', { consumer: 'indexer' }), 14);
  t.equal(x.value('dris_queue_lag_messages', { consumer: 'accumulator' }), 3);
  t.equal(x.value('dris_queue_bytes'), 1024);
  t.equal(x.value('dris_queue_max_bytes'), 4096);
  t.equal(x.value('dris_batch_open_records'), 412);
  t.equal(x.value('dris_batch_open_age_seconds'), 21.5);
  t.equal(x.value('dris_batches', { state: 'Pending' }), 1);
  t.equal(x.value('dris_batches', { state: 'Anchored' }), 608);
  t.equal(x.value('dris_batches', { state: 'Failed' }), 0);
  t.equal(x.value('dris_events_dropped_total', { subscriber: 'metrics' }), 2);
  t.same(x.find('dris_storage_free_bytes'), [], 'a failed reading');
  t.same(x.find('dris_chain_head_lag_seconds'), [], 'a reading past its deadline');
  t.equal(x.types.get('dris_chain_head_lag_seconds'), 'gauge', 'the family is still declared');
});

void t.test('not leading: no batches by state', async (t) => {
  const m = new PrometheusMetrics(['anchorer']);
  m.readings({ batchCounts: () => Promise.resolve(null), openBatch: () => null });
  const x = parseExposition(await m.render());
  t.same(x.find('dris_batches'), []);
  t.same(x.find('dris_batch_open_records'), []);
  t.equal(x.value('dris_leader'), 0, 'a process that never led says 0');
});

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { IngestKind, PipelineMetrics, ProcessReadings } from '../../app/metrics.js';
import type { VerificationStatus } from '../../domain/verification/types.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { HttpSeries, LATENCY_BUCKETS } from './http-series.js';
import { registerReadings } from './scrape-gauges.js';

/**
 * The process's metrics as Prometheus text, with prom-client on a registry of its own (never the
 * library's global one): prom-client's default process and Node.js metrics, the series of the
 * catalogue (docs/operations.md, "Metrics") for the roles this process runs, and nothing of a
 * role it does not run. Implements the PipelineMetrics port (fed by the domain events), and gives
 * the HTTP front its observer and the index its query timer.
 */

export type Role = 'api' | 'indexer' | 'anchorer';

/** 202 → Anchored, seconds: a batch closes within a minute by default, and waits for its block. */
const ANCHOR_LATENCY_BUCKETS = [1, 5, 10, 30, 60, 90, 120, 180, 300, 600];
/** Gas of one anchor transaction: about 51k for the minimal call, more with a long CID. */
const GAS_BUCKETS = [40_000, 50_000, 60_000, 80_000, 100_000, 150_000];

/** prom-client default metrics that are gauges with a `_total` name. */
const GAUGES_NAMED_TOTAL = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

interface AnchorerSeries {
  readonly formed: Counter;
  readonly anchored: Counter;
  readonly failed: Counter;
  readonly toAnchored: Histogram;
  readonly gas: Histogram;
  readonly fee: Counter;
  readonly leader: Gauge;
  readonly epoch: Gauge;
  readonly changes: Counter;
}

export class PrometheusMetrics implements PipelineMetrics {
  readonly registry = new Registry();
  /** The HTTP front's observer (api role), else null. */
  readonly http: HttpSeries | null;
  readonly #log: Logger;
  readonly #buildInfo: Gauge<'version' | 'roles' | 'hash_backend'>;
  readonly #queryDuration: Histogram<'query'>;
  readonly #queryChildren = new Map<string, Histogram.Internal<'query'>>();
  readonly #acceptedByKind: Record<IngestKind, Counter.Internal> | null = null;
  readonly #verifications: Counter<'status'> | null = null;
  readonly #indexed: Counter | null = null;
  readonly #deadLettered: Counter<'consumer'> | null = null;
  readonly #anchorer: AnchorerSeries | null = null;

  constructor(roles: readonly Role[], logger?: Logger) {
    this.#log = logger ?? componentLogger('metrics');
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // Gauges named like counters fail `promtool check metrics`; their totals are the sums of the
    // same gauges by type (nodejs_active_handles, ...), which stay.
    for (const name of GAUGES_NAMED_TOTAL) this.registry.removeSingleMetric(name);
    this.#buildInfo = new Gauge({ name: 'dris_build_info', help: 'What runs: version, roles and hashing backend (always 1).', labelNames: ['version', 'roles', 'hash_backend'], registers });
    this.#queryDuration = new Histogram({ name: 'dris_index_query_duration_seconds', help: 'Hot index query latency, by query, seconds.', labelNames: ['query'], buckets: [...LATENCY_BUCKETS], registers });
    this.http = roles.includes('api') ? new HttpSeries(this.registry) : null;
    if (roles.includes('api')) {
      const accepted = new Counter({ name: 'dris_records_accepted_total', help: 'Records answered 202 (stored by the request), by kind.', labelNames: ['kind'], registers });
      this.#acceptedByKind = { single: accepted.labels('single'), bulk: accepted.labels('bulk') };
      this.#verifications = new Counter({ name: 'dris_verifications_total', help: 'Verifications performed, by result.', labelNames: ['status'], registers });
    }
    if (roles.includes('indexer')) {
      this.#indexed = new Counter({ name: 'dris_records_indexed_total', help: 'Records written to the hot index.', registers });
      this.#deadLettered = new Counter({ name: 'dris_records_dead_lettered_total', help: 'Records set aside as dead letters, by consumer.', labelNames: ['consumer'], registers });
    }
    if (roles.includes('anchorer')) this.#anchorer = anchorerSeries(this.registry);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** dris_build_info: set once the hashing backend is known. */
  buildInfo(version: string, roles: readonly string[], hashBackend: string): void {
    this.#buildInfo.reset();
    this.#buildInfo.set({ version, roles: roles.join(','), hash_backend: hashBackend }, 1);
  }

  /** The gauges read at each scrape. Called once, when the process's parts are wired. */
  readings(r: ProcessReadings): void {
    registerReadings(this.registry, r, this.#log);
  }

  /** One hot index query of `query` (a name of a small fixed set) took `seconds`. */
  indexQuery(query: string, seconds: number): void {
    let child = this.#queryChildren.get(query);
    if (child === undefined) {
      child = this.#queryDuration.labels(query);
      this.#queryChildren.set(query, child);
    }
    child.observe(seconds);
  }

  recordsAccepted(kind: IngestKind, count: number): void {
    this.#acceptedByKind?.[kind].inc(count);
  }

  recordsIndexed(count: number): void {
    this.#indexed?.inc(count);
  }

  recordsDeadLettered(consumer: string, count: number): void {
    this.#deadLettered?.inc({ consumer }, count);
  }

  batchesFormed(count: number): void {
    this.#anchorer?.formed.inc(count);
  }

  batchAnchored(): void {
    this.#anchorer?.anchored.inc();
  }

  ingestToAnchored(seconds: number): void {
    this.#anchorer?.toAnchored.observe(seconds);
  }

  anchorGas(gasUsed: number): void {
    this.#anchorer?.gas.observe(gasUsed);
  }

  anchorFee(wei: number): void {
    this.#anchorer?.fee.inc(wei);
  }

  batchFailed(): void {
    this.#anchorer?.failed.inc();
  }

  leadership(leading: boolean, epoch: number): void {
    const a = this.#anchorer;
    if (a === null) return;
    a.leader.set(leading ? 1 : 0);
    a.epoch.set(epoch);
    a.changes.inc();
  }

  verification(status: VerificationStatus): void {
    this.#verifications?.inc({ status });
  }
}

function anchorerSeries(registry: Registry): AnchorerSeries {
  const registers = [registry];
  const leader = new Gauge({ name: 'dris_leader', help: '1 while this process leads anchoring.', registers });
  // A process that never led says so, rather than leave the series out.
  leader.set(0);
  return {
    formed: new Counter({ name: 'dris_batches_formed_total', help: 'Batches formed.', registers }),
    anchored: new Counter({ name: 'dris_batches_anchored_total', help: 'Batches anchored.', registers }),
    failed: new Counter({ name: 'dris_batches_failed_total', help: 'Batches that went Failed.', registers }),
    toAnchored: new Histogram({ name: 'dris_ingest_to_anchored_seconds', help: "Time from a record's 202 to its batch Anchored, seconds.", buckets: ANCHOR_LATENCY_BUCKETS, registers }),
    gas: new Histogram({ name: 'dris_anchor_gas_used', help: 'Gas used per anchor transaction.', buckets: GAS_BUCKETS, registers }),
    fee: new Counter({ name: 'dris_anchor_fee_wei_total', help: 'Fees paid for anchor transactions (gasUsed x effectiveGasPrice), wei.', registers }),
    leader,
    epoch: new Gauge({ name: 'dris_leader_epoch', help: 'Epoch of the current or last term.', registers }),
    changes: new Counter({ name: 'dris_leadership_changes_total', help: 'Terms begun or ended in this process.', registers }),
  };
}

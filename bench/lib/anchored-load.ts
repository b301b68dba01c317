import type { AnchorContractReader } from '../../test/harness/pipeline.js';
import { AnchoredFollower, type FollowResult } from './anchored-follower.js';
import { describeGenerator, runLoad, type LoadResult } from './load/generator.js';
import type { LoadMode, RequestSource, ResponseCheck } from './load/types.js';
import type { Progress } from './progress.js';
import { fmtNum } from './table.js';

/**
 * One load phase followed to Anchored, shared by the scenarios that measure 202 -> Anchored
 * (pipeline on the embedded default, cluster through the fleet's load balancer): the generator
 * sends requests whose record ids name their request (`<prefix><worker>-<seq>-<k>`), every
 * accepted request is handed to the follower with its intended send time, and the phase ends when
 * every accepted record is Anchored (or fails past the settle time). Transactions are counted
 * from the chain: the anchor contract's Anchored events before and after.
 */

export interface ChainCount {
  /** Distinct transactions that carried an Anchored event. */
  readonly transactions: number;
  /** Anchored events: one per batch. */
  readonly batches: number;
}

export interface ChainCounter {
  count(): Promise<ChainCount>;
}

export function chainCounter(reader: AnchorContractReader): ChainCounter {
  return {
    count: async () => {
      const events = await reader.anchoredEvents();
      return { transactions: new Set(events.map((e) => e.txHash)).size, batches: events.length };
    },
  };
}

export interface AnchoredLoadSpec {
  readonly key: string;
  readonly title: string;
  /** Where the requests go and the follower polls: the service, or a load balancer. */
  readonly target: { readonly host: string; readonly port: number; readonly url: string };
  readonly apiKey: string;
  /** A template whose record ids are `<prefix>{{W}}-{{S}}-<k>`. */
  readonly source: RequestSource;
  readonly prefix: string;
  readonly recordsPerRequest: number;
  readonly mode: LoadMode;
  readonly check: ResponseCheck;
  readonly warmupSec: number;
  readonly durationSec: number;
  readonly workers: number;
  readonly initialConnections: number;
  readonly maxConnections: number;
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly settleSec: number;
  readonly chain: ChainCounter;
  /** After the load: records sent to close the open batch on its size; returns how many. */
  readonly topUp?: (acceptedRecords: number) => Promise<number>;
}

export interface AnchoredLoadResult {
  readonly load: LoadResult;
  readonly follow: FollowResult;
  /** Records of the accepted requests, warm-up included (all are anchored and waited for). */
  readonly acceptedRecords: number;
  readonly topUpRecords: number;
  /** Anchored records over the time from the first send to the last record seen Anchored. */
  readonly anchoredPerSec: number;
  readonly transactions: number;
  readonly batches: number;
  readonly txPerThousandRecords: number;
  /** Epoch ms of the load's second 0 (the warm-up's start). */
  readonly t0EpochMs: number;
}

export async function runAnchoredLoad(progress: Progress, spec: AnchoredLoadSpec): Promise<AnchoredLoadResult> {
  const follower = new AnchoredFollower(spec.target, spec.apiKey, { prefix: spec.prefix, pollMs: spec.pollMs });
  const before = await spec.chain.count();
  const per = spec.recordsPerRequest;
  let t0 = 0;
  let acceptedRequests = 0;
  progress.extend([{ key: spec.key, seconds: spec.warmupSec + spec.durationSec + 15 }]);
  return progress.phase(spec.key, spec.title, async (h) => {
    const following = follower.run(spec.settleSec * 1000, (a, e) => h.note(`${fmtNum(a)}${e === null ? '' : ` of ${fmtNum(e)}`} records Anchored`));
    following.catch(() => undefined);
    let load: LoadResult;
    let topUpRecords = 0;
    try {
      load = await runLoad(
        {
          host: spec.target.host,
          port: spec.target.port,
          source: spec.source,
          mode: spec.mode,
          warmupSec: spec.warmupSec,
          durationSec: spec.durationSec,
          workers: spec.workers,
          initialConnections: spec.initialConnections,
          maxConnections: spec.maxConnections,
          timeoutMs: spec.timeoutMs,
          check: spec.check,
          trackAccepted: true,
        },
        {
          onStart: (t) => {
            t0 = t;
            follower.window(t + spec.warmupSec * 1000, t + (spec.warmupSec + spec.durationSec) * 1000);
          },
          onAccepted: (batch) => {
            for (const [w, seq, intended] of batch) follower.addRequest(w, seq, t0 + intended);
            acceptedRequests += batch.length;
          },
        },
      );
      if (spec.topUp !== undefined) topUpRecords = await spec.topUp(acceptedRequests * per);
    } catch (err) {
      // Not left polling for records that will never be expected.
      follower.stop();
      throw err;
    }
    const acceptedRecords = acceptedRequests * per;
    follower.expect(acceptedRecords + topUpRecords);
    h.remaining(null);
    const followed = await following;
    // A closed loop sends each request when it is due: its latency counts from the actual send.
    const f = spec.mode.kind === 'closed' ? { ...followed, latency: { ...followed.latency, label: '202 -> Anchored (from send)' } } : followed;
    const after = await spec.chain.count();
    const transactions = after.transactions - before.transactions;
    const anchoredPerSec = Math.round(f.anchored / Math.max(0.001, (f.lastAnchoredEpochMs - t0) / 1000));
    const txPerThousandRecords = Math.round((transactions / Math.max(1, f.anchored / 1000)) * 1000) / 1000;
    const e2e = f.latency.summary;
    progress.line(
      `  ${spec.title}: ${fmtNum(load.okPerSec * per)} records/s accepted, ${fmtNum(anchoredPerSec)} records/s anchored, 202 -> Anchored p50 ${fmtNum(e2e.p50)} ms, p99 ${fmtNum(e2e.p99)} ms, ${transactions} transaction(s), ${load.failed} failed`,
    );
    progress.line(`  ${describeGenerator(load)}`);
    return { load, follow: f, acceptedRecords, topUpRecords, anchoredPerSec, transactions, batches: after.batches - before.batches, txPerThousandRecords, t0EpochMs: t0 };
  });
}

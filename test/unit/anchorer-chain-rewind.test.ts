import t from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { AnchorOptions, AnchorReceipt, AnchorRequest } from '../../src/domain/pipeline/ports.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { MemoryPinner, MemoryStore, OrderedChain, record, until } from '../harness/pipeline-memory.js';

setLogLevel('silent');

const { backend: hashing } = await loadHashingBackend('js');

const formed = (n: number): FormedBatch => formBatch(Array.from({ length: 3 }, (_, i) => record(n, i)), hashing, 1_700_000_000_000 + n);

/**
 * The contract's rules in call order (OrderedChain), with anchors that can be held unmined, the
 * chain made to lose blocks (its last anchors forgotten, the held anchors abandoned with reason
 * 'chain_rewound' and the reset listeners told, as the chain adapter does), and the signal of each
 * anchor kept: an aborted one abandons its held anchor ('abandoned').
 */
class RewindingChain extends OrderedChain {
  hold = false;
  readonly signals: AbortSignal[] = [];
  private readonly listeners: (() => void)[] = [];
  private readonly unmined: ((err: DrisError) => void)[] = [];

  onReset(listener: () => void): void {
    this.listeners.push(listener);
  }

  override anchor(r: AnchorRequest, options?: AnchorOptions): Promise<AnchorReceipt> {
    if (options?.signal !== undefined) this.signals.push(options.signal);
    if (!this.hold) return super.anchor(r);
    this.calls.push(r.batchSeq);
    return new Promise((_, reject) => {
      this.unmined.push(reject);
      options?.signal?.addEventListener('abort', () => reject(new DrisError('dependency_unavailable', 'abandoned', { extra: { reason: 'abandoned' } })), { once: true });
    });
  }

  /** The blocks after sequence `keep` are lost, and the anchors held with them. */
  loseBlocks(keep: number): void {
    for (const [root, seq] of [...this.roots]) {
      if (seq > keep) {
        this.roots.delete(root);
        this.events.delete(root);
      }
    }
    this.last = keep;
    this.hold = false;
    for (const reject of this.unmined.splice(0)) reject(new DrisError('dependency_unavailable', 'rewound', { extra: { reason: 'chain_rewound' } }));
    for (const l of this.listeners) l();
  }
}

void t.test('anchors abandoned because the chain went back: given back uncounted, reconciled, anchored again in order', async (t) => {
  const store = new MemoryStore();
  const chain = new RewindingChain();
  chain.release();
  // Long backoff and no periodic reconciliation: only the rewind itself can bring the batches back soon.
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 60_000, maxDelayMs: 60_000, idleMs: 20, reconcileIntervalMs: 0 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());

  const first = [1, 2].map(formed);
  await store.saveFormedBatches(first);
  anchorer.enqueue(first);
  await until(() => [...store.batches.values()].filter((b) => b.status === 'Anchored').length === 2, 'the first two anchored');

  chain.hold = true;
  const next = [3, 4].map(formed);
  await store.saveFormedBatches(next);
  anchorer.enqueue(next);
  await until(() => chain.calls.length === 4, 'two more anchors sent, unmined');
  const readsBefore = store.anchoredReads;
  chain.loseBlocks(0);

  await until(() => [...store.batches.values()].every((b) => b.status === 'Anchored'), 'every batch anchored again');
  t.ok(store.anchoredReads > readsBefore, 'a reconciliation walked the anchored batches');
  t.same(chain.calls, [1, 2, 3, 4, 1, 2, 3, 4], 'the lost ones again under their sequences, then the abandoned ones, in order');
  const all = [...first, ...next].map((f) => store.batches.get(f.batch.batchId));
  t.same(all.map((b) => b?.batchSeq), [1, 2, 3, 4]);
  t.same(
    next.map((f) => store.batches.get(f.batch.batchId)?.attempts),
    [1, 1],
    'an abandoned anchor counts no failed attempt (and waits no backoff)',
  );
  t.equal(chain.last, 4);
});

void t.test('a term that ends gives up its anchors in flight at once; the next term anchors them', async (t) => {
  const store = new MemoryStore();
  const chain = new RewindingChain();
  chain.release();
  chain.hold = true;
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 60_000, maxDelayMs: 60_000, idleMs: 20, reconcileIntervalMs: 0 });
  await anchorer.start(1);
  let running = true;
  t.teardown(() => (running ? anchorer.stop() : undefined));
  const batches = [1, 2].map(formed);
  await store.saveFormedBatches(batches);
  anchorer.enqueue(batches);
  await until(() => chain.calls.length === 2, 'both anchors sent, unmined');

  // Held anchors settle only when given up: a stop that waited for them would never end.
  await anchorer.stop();
  running = false;
  t.ok(chain.signals.length === 2 && chain.signals.every((s) => s.aborted), 'every anchor of the term was given up');
  t.same(
    batches.map((f) => [store.batches.get(f.batch.batchId)?.status, store.batches.get(f.batch.batchId)?.attempts]),
    [
      ['Pending', 0],
      ['Pending', 0],
    ],
    'left to the next term, uncounted',
  );

  chain.hold = false;
  await anchorer.start(2);
  running = true;
  await until(() => batches.every((f) => store.batches.get(f.batch.batchId)?.status === 'Anchored'), 'the next term anchored both');
  t.same(batches.map((f) => store.batches.get(f.batch.batchId)?.batchSeq), [1, 2]);
  t.ok(chain.signals.slice(2).every((s) => !s.aborted), 'with signals of its own');
});

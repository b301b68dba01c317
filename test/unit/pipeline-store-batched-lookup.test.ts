import t from 'tap';
import { BATCHED_LOOKUP_CHUNK, ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import { ClickHouseDatabase } from '../../src/adapters/clickhouse/database.js';
import type { SqlParams, SqlRunner } from '../../src/adapters/clickhouse/sql-runner.js';

/**
 * A new leader's accumulator asks which of a backlog's ingest ids are already batched. A
 * ClickHouse server refuses a query parameter beyond its field limit, so the ids go in chunks:
 * before, a backlog of ~5000 ids or more failed every time and its delivery came back forever.
 */

class RecordingRunner implements SqlRunner {
  readonly parallelQueries = 1;
  readonly calls: string[][] = [];
  constructor(private readonly batched: ReadonlySet<string>) {}
  exec(): Promise<void> {
    return Promise.resolve();
  }
  query<T>(_sql: string, params?: SqlParams): Promise<T[]> {
    const ids = (params?.['ids'] ?? []) as readonly string[];
    this.calls.push([...ids]);
    // What a server does with a field over 128 KiB, URL-encoded.
    if (encodeURIComponent(JSON.stringify(ids)).length > 128 * 1024) return Promise.reject(new Error('Field value too long'));
    return Promise.resolve(ids.filter((id) => this.batched.has(id)).map((id) => ({ id }) as T));
  }
  queryValues(): Promise<string[]> {
    return Promise.reject(new Error('the batched look-up reads rows'));
  }
  insertJsonEachRow(): Promise<void> {
    return Promise.resolve();
  }
  insertJsonLines(): Promise<void> {
    return Promise.resolve();
  }
  insertCompactLines(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

const ulid = (i: number): string => `01M89PS462WQPT6469${String(i).padStart(8, '0')}`;

t.test('a backlog of ids is looked up in chunks the server accepts, and every batched one is found', async (t) => {
  const ids = Array.from({ length: 2 * BATCHED_LOOKUP_CHUNK + 123 }, (_, i) => ulid(i));
  const batched = new Set(ids.filter((_, i) => i % 7 === 0));
  const runner = new RecordingRunner(batched);
  const found = await new ClickHousePipelineStore(new ClickHouseDatabase(runner, { database: 'dris' })).batchedIngestIds(ids, Date.now() - 60_000);
  t.same([...found].sort(), [...batched].sort(), 'exactly the batched ids');
  t.same(
    runner.calls.map((c) => c.length),
    [BATCHED_LOOKUP_CHUNK, BATCHED_LOOKUP_CHUNK, 123],
    'three look-ups, none above the chunk',
  );
  t.same(runner.calls.flat(), ids, 'every id asked once, in order');
});

t.test('no ids, no query', async (t) => {
  const runner = new RecordingRunner(new Set());
  t.same([...(await new ClickHousePipelineStore(new ClickHouseDatabase(runner, { database: 'dris' })).batchedIngestIds([], 0))], []);
  t.equal(runner.calls.length, 0);
});

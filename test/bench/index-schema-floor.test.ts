import t from 'tap';
import { indexSchemaFloor } from '../../bench/lib/floors/index-schema.js';
import { payload1k } from '../../bench/lib/payload.js';
import { DEFAULT_INDEXER_OPTIONS } from '../../src/app/indexer.js';

/** The index schema floor inserts the indexer's own rows into dris's tables and counts what its view wrote. */

void t.test('the floor inserts whole batches through the schema and reports rate and CPU', async (t) => {
  const floor = await indexSchemaFloor(0.2, JSON.stringify(payload1k(1)));
  const rows = DEFAULT_INDEXER_OPTIONS.maxWriteRecords;
  t.ok(floor.rowsInserted >= rows && floor.rowsInserted % rows === 0, `${floor.rowsInserted} rows, in inserts of the indexer's largest write`);
  t.ok(floor.insertRowsPerSec > 0, 'a rate');
  t.ok(floor.cpuMsPer1000 > 0, 'CPU per 1000 rows');
});

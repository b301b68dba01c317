import { createTable, migration, type Migration } from './migration.js';

/**
 * batch_blocks (migration 24): per batch of more than 16 records, the roots of its tree's 16-leaf
 * blocks, the level from which a record's audit path is no longer kept in its record_evidence row
 * (see batch-tops.ts). Written once per batch, beside its evidence rows and before the batch row
 * that commits them; a batch formed again has the same id and the same content, so duplicates are
 * equal and collapse in merges.
 *
 * About 4 KiB per 1000-leaf batch (63 roots as hex). Granules of 32 rows: a read of one batch
 * decompresses about 128 KiB, where its leaves in `batches` (64 KiB of hex per version, in
 * granules of about 10 MiB) cost tens of milliseconds a read.
 */

const BATCH_BLOCKS = 'batch_id String, tree_size UInt32, block_roots String';

export const batchBlocksMigrations = (db: string): readonly Migration[] => [
  migration(24, 'create batch_blocks', createTable(`${db}.batch_blocks`, BATCH_BLOCKS, { engine: 'ReplacingMergeTree', orderBy: 'batch_id', settings: 'index_granularity = 32' })),
];

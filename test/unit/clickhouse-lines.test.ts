import t from 'tap';
import { lookupLinesOf, referenceLookupLine } from '../../src/adapters/clickhouse/evidence-rows.js';
import { RECORD_LINE_COLUMNS, recordLines, toPendingRecord } from '../../src/adapters/clickhouse/record-rows.js';
import type { LeafAssignment } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { record } from '../harness/pipeline-memory.js';

/** Strings a tenant may send, escapes and all: every line must be the text JSON.stringify writes. */
const ODD = ['plain', 'quote " and \\ backslash', 'line\nbreak\ttab\u0001', 'sep \u2028 \u2029', 'lone \ud800', 'pair 😀', 'ü é', ''];

function oddRecord(i: number): AcceptedRecord {
  const s = ODD[i % ODD.length] ?? '';
  return {
    ...record(1, i),
    tenantId: `t${s}`,
    database: `d${s}`,
    collection: `c${s}`,
    recordId: `r${s}${i}`,
    recordVersion: `v${s}`,
    sourceTimestamp: i % 2 === 0 ? null : `2026-11-25T00:00:0${i % 10}Z`,
    clientId: `client${s}`,
    keyId: `key${s}`,
    idempotencyKey: i % 3 === 0 ? null : `idem${s}`,
    correlationId: `corr${s}`,
    payload: `{"text":${JSON.stringify(s)}}`,
  };
}

const records = Array.from({ length: 3 * ODD.length }, (_, i) => oddRecord(i));

void t.test('record lines: each is the values of the row in column order as JSON.stringify writes them, the payload object last', (t) => {
  const pending = records.map(toPendingRecord);
  const head = RECORD_LINE_COLUMNS.slice(0, -1) as (keyof (typeof pending)[number]['row'])[];
  t.equal(RECORD_LINE_COLUMNS.at(-1), 'payload', 'the payload is the last column');
  t.same([...head].sort(), Object.keys(pending[0]?.row ?? {}).sort(), 'and every other column of the row comes before it, once');
  const line = (p: (typeof pending)[number]): string => `${JSON.stringify(head.map((k) => p.row[k])).slice(0, -1)},${String(p.payload)}]\n`;
  t.equal(recordLines(pending).toString('utf8'), pending.map(line).join(''));
  const batched = { ...pending[0], row: { ...pending[0]?.row, batch_id: 'b-1', merkle_proof: ['ab'] } } as (typeof pending)[number];
  t.equal(recordLines([batched]).toString('utf8'), line(batched), 'a row not as indexing makes it: JSON.stringify writes it');
  const text = { ...pending[1], payload: 'not an object' } as (typeof pending)[number];
  t.equal(recordLines([text]).toString('utf8'), `${JSON.stringify(head.map((k) => text.row[k])).slice(0, -1)},"not an object"]\n`, 'a payload that is no object text is a JSON string');
  t.end();
});

void t.test('evidence lines: each is the row as JSON.stringify writes it (the reference), proofs of every length', (t) => {
  const assignments: LeafAssignment[] = records.map((r, i) => ({
    ingestId: r.ingestId,
    tenantId: r.tenantId,
    snapshotId: `s-${i}`,
    batchId: 'b-1',
    leafIndex: i,
    treeSize: records.length,
    proof: Array.from({ length: i % 5 }, (_, k) => `${k}`.repeat(64).slice(0, 64).replace(/[^0-9a-f]/g, 'a')),
  }));
  const version = 1_795_000_000_000_123;
  const want = records.map((r, i) => referenceLookupLine(r, assignments[i] as LeafAssignment, version)).join('');
  t.equal(lookupLinesOf(records, assignments, version).toString('utf8'), want);
  const odd = { ...assignments[1], proof: ['not "hex"'] } as LeafAssignment;
  t.equal(lookupLinesOf([records[1] as AcceptedRecord], [odd], version).toString('utf8'), referenceLookupLine(records[1] as AcceptedRecord, odd, version), 'a proof that is not hex is escaped');
  t.end();
});

import t from 'tap';
import { HASH_SCHEME, type BulkIngestResponse, type BulkItemAccepted, type IngestRecordResponse } from '../../src/domain/records/types.js';
import { bulkAnswerJson, ingestAnswerJson } from '../../src/http/ingest-answer-json.js';

const ODD = ['plain', 'quote " and \\ backslash', 'line\nbreak\ttab\u0001\u001f', 'sep \u2028 \u2029', 'lone \ud800 surrogate', 'tail \udfff', 'pair 😀', 'ü é', '', '\u007f del'];

const answer = (recordId: string, tenantId: string, replayed: boolean): IngestRecordResponse => ({
  recordId,
  recordHash: 'a'.repeat(64),
  tenantId,
  acceptedAt: '2026-11-25T20:00:00.000Z',
  idempotencyReplayed: replayed,
  payloadHash: 'b'.repeat(64),
  salt: 'c'.repeat(32),
  hashScheme: HASH_SCHEME,
  ingestId: 'ing_0123456789',
});

const item = (index: number, recordId: string, tenantId: string, replayed: boolean): BulkItemAccepted => ({
  index,
  recordId,
  recordHash: 'd'.repeat(64),
  tenantId,
  acceptedAt: '2026-11-25T20:00:00.001Z',
  payloadHash: 'e'.repeat(64),
  salt: 'f'.repeat(32),
  ingestId: `ing_${index}`,
  idempotencyReplayed: replayed,
});

void t.test('the single ingest answer is the text JSON.stringify writes', (t) => {
  for (const id of ODD) {
    for (const replayed of [false, true]) {
      const a = answer(id, `tenant ${id}`, replayed);
      t.equal(ingestAnswerJson(a), JSON.stringify(a));
    }
  }
  t.end();
});

void t.test('the bulk answer is the text JSON.stringify writes, rejected items included', (t) => {
  const items = ODD.map((id, i) => item(i * 2, id, i % 2 === 0 ? 'acme' : `t ${id}`, i % 3 === 0));
  const b: BulkIngestResponse = {
    total: ODD.length * 2,
    accepted: items.length,
    items,
    rejected: ODD.map((id, i) => ({ index: i * 2 + 1, recordId: i === 0 ? null : id, error: 'validation_failed', details: [`records[${i * 2 + 1}].recordId: ${id}`] })),
  };
  t.equal(bulkAnswerJson(b), JSON.stringify(b));
  const none: BulkIngestResponse = { total: 1, accepted: 1, items: [item(0, 'r', 'acme', false)], rejected: [] };
  t.equal(bulkAnswerJson(none), JSON.stringify(none));
  t.end();
});

void t.test('a member not of its declared type is left to JSON.stringify, whole', (t) => {
  const odd = { ...answer('r', 'acme', false), recordId: 7 as unknown as string };
  t.equal(ingestAnswerJson(odd), JSON.stringify(odd));
  const b = { total: 1, accepted: 1, items: [{ ...item(0, 'r', 'acme', false), salt: undefined as unknown as string }], rejected: [] };
  t.equal(bulkAnswerJson(b), JSON.stringify(b));
  const fractional = { total: 1.5, accepted: 1, items: [item(0, 'r', 'acme', false)], rejected: [] };
  t.equal(bulkAnswerJson(fractional), JSON.stringify(fractional));
  t.end();
});

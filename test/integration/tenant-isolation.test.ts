import { createHash, randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { createKey, eventually, request, startService, type ApiAnswer, type ServiceHandle } from '../harness/service.js';

/**
 * Tenant isolation through the HTTP API of one real service (embedded default). Tenant B ingests
 * records (single and bulk), waits until they are Anchored, verifies some, fetches a receipt and
 * asks the retrieval controls, so that B has records, snapshots, batches, verification history and
 * audit entries. Then, with a key of tenant A, a table-driven matrix runs over every /api/v1
 * operation of the OpenAPI document served at /swagger/openapi.json (a route added later without a
 * row fails the test):
 *   1. naming tenant B (tenantId in the query or the body) answers 403 `forbidden_tenant`, exactly
 *      as naming a tenant that does not exist;
 *   2. B's identifiers without naming the tenant answer exactly as unknown identifiers of the same
 *      shape: 404 `not_found`; for verifications a 200 `fail` / `not_found`; for listings an empty
 *      page; for ingestion a fresh acceptance (B's idempotency keys replay nothing);
 *   and no answer carries any of B's identifiers, hashes, salts or payload values that the
 *   request did not itself carry (searched in the raw text of the body and the headers);
 *   3. A's listings (records, snapshots, verification history, audit trail) hold none of B's.
 * Every row also runs the same read with a key of tenant A that may act for B (alsoTenants), which
 * must succeed: the matrix fails in both directions. docs/decisions.md "Tenant isolation".
 */

type Json = Record<string, unknown>;
type Ids = Record<string, string>;
type Answer = ApiAnswer<Json>;

interface Req {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/**
 * What B's identifiers must answer, exactly as unknown ones do:
 * - not_found: 404 `not_found`;
 * - verify_not_found: 200, verificationStatus `fail`, reasonCategory `not_found`;
 * - hash_not_found: 200, no match, `fail` / `not_found`;
 * - no_decision: 200, every record denied as `not_found`;
 * - empty: 200, an empty page;
 * - accepted: 202, a fresh acceptance (nothing replayed);
 * - not_in_batch: batchId mode reads only the chain and the public manifest, with the caller's
 *   tenant in the envelope: 200 `fail` / `not_in_batch`, as an unknown record of a batch.
 */
type Expectation = 'not_found' | 'verify_not_found' | 'hash_not_found' | 'no_decision' | 'empty' | 'accepted' | 'not_in_batch';

interface Probe {
  readonly name: string;
  /** B's identifiers (everything the request carries, or that is computed from what it carries). */
  readonly foreign: () => Ids;
  /** Identifiers of the same shape that name nothing. */
  readonly unknown: () => Ids;
  readonly build: (ids: Ids) => Req;
  readonly expect: Expectation;
}

interface Row {
  /** Case 1: the request naming `tenant` explicitly. */
  readonly named: readonly ((tenant: string) => Req)[];
  /** Case 2: B's identifiers without naming B. */
  readonly probes: readonly Probe[];
  /** The same read with the key that may act for B: must succeed. */
  readonly allowed: { readonly req: () => Req; readonly check: (t: Test, a: Answer) => void };
}

const rnd = (bytes = 8): string => randomBytes(bytes).toString('hex');
const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

const A = 'tenant-a';
const B = 'tenant-b';
const B_CLIENT = `bclient-${rnd(4)}`;
const DB_A = 'ledger';
const COL_A = 'acol';
const DB_B = `bdb-${rnd()}`;
const COL_B = `bcol-${rnd()}`;
const MARK = `bmark-${rnd()}`;

interface Accepted {
  recordId: string;
  recordHash: string;
  payloadHash: string;
  salt: string;
  ingestId: string;
  tenantId: string;
}
interface BRecord extends Accepted {
  payload: Json;
}

let svc: ServiceHandle;
let keyA = '';
let keyB = '';
let keyBId = '';
let keyAlso = '';
const keyIdsOfA = new Set<string>();

/** B's records by name (b1 … b5, then those written during the matrix). */
const bRec = new Map<string, BRecord>();
let snapB = ''; // a snapshot of a batch holding only B's records
let snapBShared = ''; // B's snapshot in the batch shared with A
let snapAShared = '';
let batchB = ''; // a batch holding only B's records
let batchShared = '';
const bVerificationIds: string[] = [];
const bIdem = { single: `idem-${rnd()}`, bulk: `idem-${rnd()}`, item: `idem-${rnd()}` };

/** Every identifier, hash and payload value of B; `tiedTo`: public batch evidence a request naming that batch may see. */
const secrets = new Map<string, { label: string; tiedTo?: string }>();
/** Values of B that A's own requests carried (they may come back in A's own history and audit). */
const sentByA = new Set<string>();

function secret(value: string | null | undefined, label: string, tiedTo?: string): void {
  if (value === null || value === undefined || value.length < 8) return;
  if (!secrets.has(value)) secrets.set(value, tiedTo === undefined ? { label } : { label, tiedTo });
}

const payloadB = (name: string): Json => ({ amount: 4200, name, note: `${MARK}-${name}` });
const payloadHashOf = (p: Json): string => sha256(canonicalize(p));
const bRecordBody = (name: string, recordId: string, tenant: string = B): Json => ({ tenantId: tenant, database: DB_B, collection: COL_B, recordId, recordPayload: payloadB(name) });
const aRecordBody = (): Json => ({ tenantId: A, database: DB_A, collection: COL_A, recordId: `arec-${rnd()}`, recordPayload: { amount: 7, memo: `a-${rnd(4)}` } });

function b(name: string): BRecord {
  const r = bRec.get(name);
  if (r === undefined) throw new Error(`no B record ${name}`);
  return r;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const itemsOf = (a: Answer): Json[] => (Array.isArray(a.body['items']) ? (a.body['items'] as Json[]) : []);

async function send(key: string, req: Req): Promise<Answer> {
  return request<Json>(svc, req.method, req.path, {
    key,
    ...(req.body === undefined ? {} : { body: req.body }),
    ...(req.headers === undefined ? {} : { headers: req.headers }),
  });
}

function requestText(req: Req): string {
  return `${req.path}\n${JSON.stringify(req.body ?? null)}\n${JSON.stringify(req.headers ?? {})}`;
}

function answerText(a: Answer): string {
  const headers: string[] = [];
  a.headers.forEach((v, k) => headers.push(`${k}: ${v}`));
  return `${a.text}\n${headers.join('\n')}`;
}

/** B's values found in an answer, leaving out those the request carried (an echo reveals nothing). */
function leaks(text: string, exempt: ReadonlySet<string>): string[] {
  const found: string[] = [];
  for (const [value, s] of secrets) {
    if (exempt.has(value) || (s.tiedTo !== undefined && exempt.has(s.tiedTo))) continue;
    if (text.includes(value)) found.push(`${s.label} ${value}`);
  }
  return found;
}

function exemptOf(req: Req, ids: Ids = {}): Set<string> {
  const text = requestText(req);
  const out = new Set<string>(Object.values(ids));
  for (const value of secrets.keys()) if (text.includes(value)) out.add(value);
  return out;
}

const VOLATILE = new Set(['verificationId', 'verifiedAt', 'evaluatedAt']);

function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v as Json).filter(([k]) => !VOLATILE.has(k)).map(([k, x]) => [k, strip(x)]));
}

/** The answer with each identifier replaced by its name, volatile members (ids, times) removed. */
function normalized(a: Answer, ids: Ids): unknown {
  let text = a.text;
  for (const [name, value] of Object.entries(ids).sort((x, y) => y[1].length - x[1].length)) text = text.split(value).join(`<${name}>`);
  try {
    return strip(JSON.parse(text));
  } catch {
    return text;
  }
}

function describe(req: Req, a: Answer): string {
  return `${req.method} ${req.path}${req.body === undefined ? '' : ` ${JSON.stringify(req.body)}`} -> ${a.status} ${a.text.slice(0, 600)}`;
}

async function anchoredRecords(key: string, tenant: string, recordIds: readonly string[]): Promise<Json[]> {
  return eventually(
    async () => {
      const r = await request<Json>(svc, 'GET', `/api/v1/records?tenantId=${tenant}&limit=1000`, { key });
      const items = itemsOf(r as Answer).filter((i) => recordIds.includes(str(i['recordId'])));
      return items.length === recordIds.length && items.every((i) => i['status'] === 'Anchored') ? items : undefined;
    },
    180_000,
    300,
  );
}

function remember(name: string, a: Accepted, payload: Json): void {
  bRec.set(name, { ...a, payload });
  secret(a.recordId, `B recordId (${name})`);
  secret(a.recordHash, `B recordHash (${name})`);
  secret(a.payloadHash, `B payloadHash (${name})`);
  secret(a.salt, `B salt (${name})`);
  secret(a.ingestId, `B ingestId (${name})`);
  secret(str(payload['note']), `B payload value (${name})`);
}

t.before(async () => {
  svc = await startService({ env: { DRIS_BATCH_MAX_WAIT_MS: '500', DRIS_VERIFY_CHAIN_CACHE_MS: '0', DRIS_RATE_LIMITS: 'standard=1000000' } });
  const a = await createKey(svc, { tenantId: A, clientId: 'app' });
  const bk = await createKey(svc, { tenantId: B, clientId: B_CLIENT });
  const also = await createKey(svc, { tenantId: A, clientId: 'auditor', alsoTenants: [B] });
  keyA = a.apiKey;
  keyB = bk.apiKey;
  keyBId = bk.key.keyId;
  keyAlso = also.apiKey;
  keyIdsOfA.add(a.key.keyId).add(also.key.keyId);
  secret(keyBId, 'B keyId');
  secret(B_CLIENT, 'B clientId');
  secret(DB_B, 'B database');
  secret(COL_B, 'B collection');
  for (const [k, v] of Object.entries(bIdem)) secret(v, `B idempotency key (${k})`);

  // B alone: a single record (with an idempotency key), bulk form A (request and item keys), bulk form B.
  const b1Id = `brec-b1-${rnd()}`;
  const one = await request<Accepted>(svc, 'POST', '/api/v1/records', { key: keyB, body: bRecordBody('b1', b1Id), headers: { 'idempotency-key': bIdem.single } });
  if (one.status !== 202) throw new Error(`B ingest failed: ${one.status} ${one.text}`);
  remember('b1', one.body, payloadB('b1'));
  const bulkA = await request<{ items: Accepted[] }>(svc, 'POST', '/api/v1/records/bulk', {
    key: keyB,
    headers: { 'idempotency-key': bIdem.bulk },
    body: {
      tenantId: B,
      records: [
        { ...bRecordBody('b2', `brec-b2-${rnd()}`), idempotencyKey: bIdem.item },
        { database: DB_B, collection: COL_B, recordId: `brec-b3-${rnd()}`, recordPayload: payloadB('b3') },
      ],
    },
  });
  if (bulkA.status !== 202 || bulkA.body.items.length !== 2) throw new Error(`B bulk failed: ${bulkA.status} ${bulkA.text}`);
  for (const it of bulkA.body.items) {
    const name = it.recordId.split('-')[1] ?? '';
    remember(name, it, payloadB(name));
  }
  const bulkB = await request<{ items: Accepted[] }>(svc, 'POST', '/api/v1/records/bulk', { key: keyB, body: { items: [bRecordBody('b4', `brec-b4-${rnd()}`)] } });
  if (bulkB.status !== 202 || bulkB.body.items.length !== 1) throw new Error(`B bulk failed: ${bulkB.status} ${bulkB.text}`);
  remember('b4', bulkB.body.items[0] as Accepted, payloadB('b4'));
  const first = await anchoredRecords(keyB, B, ['b1', 'b2', 'b3', 'b4'].map((n) => b(n).recordId));
  const b1Row = first.find((i) => i['recordId'] === b1Id);
  snapB = str(b1Row?.['snapshotId']);
  batchB = str(b1Row?.['batchId']);

  // A and B at the same moment: one batch holding both tenants (retried if the timer split them).
  let aRecordId = '';
  for (let attempt = 1; batchShared === '' && attempt <= 5; attempt++) {
    const name = attempt === 1 ? 'b5' : `b5x${attempt}`;
    const aBody = aRecordBody();
    const bId = `brec-${name}-${rnd()}`;
    const [ra, rb] = await Promise.all([
      request<Accepted>(svc, 'POST', '/api/v1/records', { key: keyA, body: aBody }),
      request<Accepted>(svc, 'POST', '/api/v1/records', { key: keyB, body: bRecordBody(name, bId) }),
    ]);
    if (ra.status !== 202 || rb.status !== 202) throw new Error(`ingest failed: ${ra.text} ${rb.text}`);
    remember(name, rb.body, payloadB(name));
    const [ia] = await anchoredRecords(keyA, A, [str(aBody['recordId'])]);
    const [ib] = await anchoredRecords(keyB, B, [bId]);
    if (ia !== undefined && ib !== undefined && ia['batchId'] === ib['batchId']) {
      batchShared = str(ia['batchId']);
      snapAShared = str(ia['snapshotId']);
      snapBShared = str(ib['snapshotId']);
      aRecordId = str(aBody['recordId']);
      if (name !== 'b5') bRec.set('b5', b(name));
    }
  }
  if (batchShared === '') throw new Error('no batch shared by A and B after 5 attempts');

  // B's verification history, receipts and access decisions.
  const verifications: Json[] = [
    (await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: keyB, body: { collection: COL_B, recordId: b('b1').recordId } })).body,
    (await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: keyB, body: { tenantId: B, database: DB_B, collection: COL_B, recordId: b('b2').recordId, payload: b('b2').payload } })).body,
    (await request<Json>(svc, 'POST', '/api/v1/verify/payload', { key: keyB, body: { recordHash: b('b3').recordHash } })).body,
    (await request<Json>(svc, 'GET', `/api/v1/verify/snapshot/${snapB}`, { key: keyB })).body,
  ];
  for (const v of verifications) {
    if (v['verificationStatus'] !== 'pass') throw new Error(`B's verification did not pass: ${JSON.stringify(v)}`);
    bVerificationIds.push(str(v['verificationId']));
  }
  const receipt = await request<Json>(svc, 'GET', `/api/v1/receipts/record?collection=${COL_B}&recordId=${b('b1').recordId}`, { key: keyB });
  if (receipt.status !== 200) throw new Error(`B receipt: ${receipt.status} ${receipt.text}`);
  const access = await request<Json>(svc, 'POST', '/api/v1/evidence/retrieval-controls', { key: keyB, body: { records: [{ collection: COL_B, recordId: b('b1').recordId }] } });
  if (access.status !== 200) throw new Error(`B retrieval controls: ${access.status} ${access.text}`);
  // A's own activity, so A's listings are not empty.
  const own = await request<Json>(svc, 'POST', '/api/v1/verify/record', { key: keyA, body: { collection: COL_A, recordId: aRecordId } });
  if (own.body['verificationStatus'] !== 'pass') throw new Error(`A's verification: ${own.text}`);

  // Everything B holds, read back with B's key.
  const bRecords = await request<Json>(svc, 'GET', `/api/v1/records?tenantId=${B}&limit=1000`, { key: keyB });
  for (const i of itemsOf(bRecords as Answer)) {
    secret(str(i['snapshotId']), 'B snapshotId');
    if (i['batchId'] !== batchShared) secret(str(i['batchId']), 'B-only batchId');
  }
  const bSnaps = await request<Json>(svc, 'GET', '/api/v1/snapshots?limit=1000', { key: keyB });
  for (const s of itemsOf(bSnaps as Answer)) {
    secret(str(s['snapshotId']), 'B snapshotId');
    secret(str(s['snapshotHash']), 'B snapshotHash');
    const batchId = str(s['batchId']);
    if (batchId === batchShared) continue;
    secret(batchId, 'B-only batchId');
    const batch = await request<Json>(svc, 'GET', `/api/v1/batches/${batchId}`, { key: keyB });
    secret(str(batch.body['merkleRoot']), 'B-only batch merkleRoot', batchId);
    secret(str(batch.body['chainTxHash']), 'B-only batch transaction', batchId);
    secret(str(batch.body['ipfsCid']), 'B-only batch manifest CID', batchId);
  }
  for (const v of bVerificationIds) secret(v, 'B verificationId');
  const expectIngests = [...bRec.values()].map((r) => `ingest:${r.ingestId}`);
  const trail = await eventually(
    async () => {
      const r = await request<Json>(svc, 'GET', '/api/v1/audit/history?limit=1000', { key: keyB });
      const ids = itemsOf(r as Answer).map((e) => str(e['eventId']));
      return expectIngests.every((e) => ids.includes(e)) ? itemsOf(r as Answer) : undefined;
    },
    60_000,
    300,
  );
  for (const e of trail) {
    secret(str(e['eventId']), `B audit eventId (${str(e['action'])})`);
    secret(str(e['correlationId']), 'B correlationId');
  }
});
t.teardown(() => svc.dispose());

// ---- the matrix -----------------------------------------------------------------------------------

const q = (params: Json): string =>
  new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => typeof e[1] === 'string')).toString();

const recordIds = (name: string) => (): Ids => ({ collection: COL_B, recordId: b(name).recordId });
const unknownRecord = (): Ids => ({ collection: `bcol-${rnd()}`, recordId: `brec-u-${rnd()}` });

const matrix: Record<string, Row> = {
  'GET /api/v1/records': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/records?${q({ tenantId: tn, recordId: b('b1').recordId })}` })],
    probes: [
      { name: "B's recordId", foreign: () => ({ recordId: b('b3').recordId }), unknown: () => ({ recordId: `brec-u-${rnd()}` }), build: (i) => ({ method: 'GET', path: `/api/v1/records?${q({ tenantId: A, recordId: i['recordId'] })}` }), expect: 'empty' },
      { name: "B's snapshotId", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/records?${q({ tenantId: A, snapshotId: i['snapshotId'] })}` }), expect: 'empty' },
      { name: "B's collection", foreign: () => ({ collection: COL_B, database: DB_B }), unknown: () => ({ collection: `bcol-${rnd()}`, database: `bdb-${rnd()}` }), build: (i) => ({ method: 'GET', path: `/api/v1/records?${q({ tenantId: A, database: i['database'], collection: i['collection'] })}` }), expect: 'empty' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/records?${q({ tenantId: B, recordId: b('b1').recordId })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.equal(itemsOf(a)[0]?.['recordHash'], b('b1').recordHash);
      },
    },
  },
  'GET /api/v1/snapshots': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/snapshots?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's recordId", foreign: () => ({ recordId: b('b3').recordId }), unknown: () => ({ recordId: `brec-u-${rnd()}` }), build: (i) => ({ method: 'GET', path: `/api/v1/snapshots?${q({ recordId: i['recordId'] })}` }), expect: 'empty' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/snapshots?${q({ tenantId: B, limit: '1000' })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.ok(itemsOf(a).some((s) => s['snapshotId'] === snapB) && itemsOf(a).some((s) => s['snapshotId'] === snapBShared));
      },
    },
  },
  'GET /api/v1/verify/history': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/verify/history?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's recordId", foreign: () => ({ recordId: b('b3').recordId }), unknown: () => ({ recordId: `brec-u-${rnd()}` }), build: (i) => ({ method: 'GET', path: `/api/v1/verify/history?${q({ recordId: i['recordId'] })}` }), expect: 'empty' },
      { name: "B's snapshotId", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/verify/history?${q({ snapshotId: i['snapshotId'] })}` }), expect: 'empty' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/verify/history?${q({ tenantId: B, limit: '1000' })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        const ids = itemsOf(a).map((e) => e['verificationId']);
        t.ok(bVerificationIds.every((v) => ids.includes(v)), "B's verifications are listed");
      },
    },
  },
  'GET /api/v1/audit/history': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/audit/history?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's keyId", foreign: () => ({ keyId: keyBId }), unknown: () => ({ keyId: rnd(8).toUpperCase() }), build: (i) => ({ method: 'GET', path: `/api/v1/audit/history?${q({ keyId: i['keyId'] })}` }), expect: 'empty' },
      { name: "B's clientId", foreign: () => ({ clientId: B_CLIENT }), unknown: () => ({ clientId: `bclient-${rnd(4)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/audit/history?${q({ clientId: i['clientId'] })}` }), expect: 'empty' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/audit/history?${q({ tenantId: B, limit: '1000' })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.ok(itemsOf(a).some((e) => e['eventId'] === `ingest:${b('b1').ingestId}`), "B's ingestion is in B's trail");
      },
    },
  },
  'POST /api/v1/records': {
    named: [(tn) => ({ method: 'POST', path: '/api/v1/records', body: bRecordBody('b1', b('b1').recordId, tn), headers: { 'idempotency-key': bIdem.single } })],
    probes: [
      { name: "B's idempotency key", foreign: () => ({ idem: bIdem.single }), unknown: () => ({ idem: `idem-${rnd()}` }), build: (i) => ({ method: 'POST', path: '/api/v1/records', body: aRecordBody(), headers: { 'idempotency-key': i['idem'] ?? '' } }), expect: 'accepted' },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: '/api/v1/records', body: bRecordBody('b6', `brec-b6-${rnd()}`) }),
      check: (t, a) => {
        t.equal(a.status, 202);
        t.equal(a.body['tenantId'], B);
        remember('b6', a.body as unknown as Accepted, payloadB('b6'));
      },
    },
  },
  'POST /api/v1/records/bulk': {
    named: [
      (tn) => ({ method: 'POST', path: '/api/v1/records/bulk', headers: { 'idempotency-key': bIdem.bulk }, body: { tenantId: tn, records: [{ ...bRecordBody('b2', b('b2').recordId, tn), idempotencyKey: bIdem.item }] } }),
      (tn) => ({ method: 'POST', path: '/api/v1/records/bulk', body: { items: [bRecordBody('b4', b('b4').recordId, tn)] } }),
    ],
    probes: [
      {
        name: "B's request and item idempotency keys",
        foreign: () => ({ idem: bIdem.bulk, item: bIdem.item }),
        unknown: () => ({ idem: `idem-${rnd()}`, item: `idem-${rnd()}` }),
        build: (i) => ({ method: 'POST', path: '/api/v1/records/bulk', headers: { 'idempotency-key': i['idem'] ?? '' }, body: { tenantId: A, records: [{ ...aRecordBody(), idempotencyKey: i['item'] }, aRecordBody()] } }),
        expect: 'accepted',
      },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: '/api/v1/records/bulk', body: { tenantId: B, records: [bRecordBody('b7', `brec-b7-${rnd()}`)] } }),
      check: (t, a) => {
        t.equal(a.status, 202);
        const item = itemsOf(a)[0];
        t.equal(item?.['tenantId'], B);
        if (item !== undefined) remember('b7', item as unknown as Accepted, payloadB('b7'));
      },
    },
  },
  'POST /api/v1/verify/record': {
    named: [(tn) => ({ method: 'POST', path: '/api/v1/verify/record', body: { tenantId: tn, collection: COL_B, recordId: b('b1').recordId } })],
    probes: [
      { name: 'stored hash', foreign: recordIds('b1'), unknown: unknownRecord, build: (i) => ({ method: 'POST', path: '/api/v1/verify/record', body: { collection: i['collection'], recordId: i['recordId'] } }), expect: 'verify_not_found' },
      {
        name: "B's payload",
        foreign: () => ({ collection: COL_B, database: DB_B, recordId: b('b2').recordId, note: str(b('b2').payload['note']), payloadHash: b('b2').payloadHash }),
        unknown: () => {
          const note = `${MARK}-u${rnd(4)}`;
          return { collection: `bcol-${rnd()}`, database: `bdb-${rnd()}`, recordId: `brec-u-${rnd()}`, note, payloadHash: payloadHashOf({ amount: 4200, name: 'b2', note }) };
        },
        build: (i) => ({ method: 'POST', path: '/api/v1/verify/record', body: { database: i['database'], collection: i['collection'], recordId: i['recordId'], payload: { amount: 4200, name: 'b2', note: i['note'] } } }),
        expect: 'verify_not_found',
      },
      {
        name: "B's batchId with B's envelope",
        foreign: () => ({ batchId: batchB, database: DB_B, collection: COL_B, recordId: b('b2').recordId, salt: b('b2').salt, payloadHash: b('b2').payloadHash }),
        unknown: () => ({ batchId: batchShared, database: `bdb-${rnd()}`, collection: `bcol-${rnd()}`, recordId: `brec-u-${rnd()}`, salt: rnd(16), payloadHash: sha256(rnd()) }),
        build: (i) => ({
          method: 'POST',
          path: '/api/v1/verify/record',
          body: { batchId: i['batchId'], database: i['database'], collection: i['collection'], recordId: i['recordId'], salt: i['salt'], payloadHash: i['payloadHash'] },
        }),
        expect: 'not_in_batch',
      },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: '/api/v1/verify/record', body: { tenantId: B, collection: COL_B, recordId: b('b1').recordId } }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { verified: true, verificationStatus: 'pass', reasonCategory: 'verified_anchored', tenantId: B, recordHash: b('b1').recordHash });
      },
    },
  },
  'POST /api/v1/verify/payload': {
    named: [(tn) => ({ method: 'POST', path: '/api/v1/verify/payload', body: { tenantId: tn, recordHash: b('b3').recordHash } })],
    probes: [
      { name: "B's recordHash", foreign: () => ({ hash: b('b3').recordHash }), unknown: () => ({ hash: sha256(rnd()) }), build: (i) => ({ method: 'POST', path: '/api/v1/verify/payload', body: { recordHash: i['hash'] } }), expect: 'hash_not_found' },
      { name: "B's payloadHash", foreign: () => ({ hash: b('b4').payloadHash }), unknown: () => ({ hash: sha256(rnd()) }), build: (i) => ({ method: 'POST', path: '/api/v1/verify/payload', body: { payloadHash: i['hash'] } }), expect: 'hash_not_found' },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: '/api/v1/verify/payload', body: { tenantId: B, recordHash: b('b3').recordHash } }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { anchored: true, matches: 1, verificationStatus: 'pass', tenantId: B });
      },
    },
  },
  'GET /api/v1/verify/snapshot/{snapshotId}': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/verify/snapshot/${snapB}?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's snapshot", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/verify/snapshot/${i['snapshotId'] ?? ''}` }), expect: 'not_found' },
      { name: "B's snapshot in a shared batch", foreign: () => ({ snapshotId: snapBShared }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/verify/snapshot/${i['snapshotId'] ?? ''}` }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/verify/snapshot/${snapB}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { snapshotId: snapB, tenantId: B, verificationStatus: 'pass', anchoredOnChain: true });
      },
    },
  },
  'GET /api/v1/snapshots/{snapshotId}': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/snapshots/${snapB}?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's snapshot", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/snapshots/${i['snapshotId'] ?? ''}` }), expect: 'not_found' },
      { name: "B's snapshot in a shared batch", foreign: () => ({ snapshotId: snapBShared }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/snapshots/${i['snapshotId'] ?? ''}` }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/snapshots/${snapB}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { snapshotId: snapB, tenantId: B, status: 'Anchored' });
      },
    },
  },
  'GET /api/v1/snapshots/{snapshotId}/lifecycle': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/snapshots/${snapB}/lifecycle?${q({ tenantId: tn })}` })],
    probes: [
      { name: "B's snapshot", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/snapshots/${i['snapshotId'] ?? ''}/lifecycle` }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/snapshots/${snapB}/lifecycle` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.same(itemsOf(a).map((e) => e['state']), ['Ingested', 'PendingAnchor', 'Batched', 'Anchored']);
      },
    },
  },
  'POST /api/v1/snapshots/{snapshotId}/retry': {
    named: [(tn) => ({ method: 'POST', path: `/api/v1/snapshots/${snapB}/retry?${q({ tenantId: tn })}`, body: {} })],
    probes: [
      { name: "B's (Anchored) snapshot", foreign: () => ({ snapshotId: snapB }), unknown: () => ({ snapshotId: `s_${rnd(16)}` }), build: (i) => ({ method: 'POST', path: `/api/v1/snapshots/${i['snapshotId'] ?? ''}/retry`, body: {} }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: `/api/v1/snapshots/${snapB}/retry`, body: {} }),
      check: (t, a) => {
        t.equal(a.status, 409, 'found, and not Failed');
        t.equal(a.body['error'], 'invalid_state');
      },
    },
  },
  'GET /api/v1/batches/{batchId}': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/batches/${batchB}?${q({ tenantId: tn })}` })],
    probes: [{ name: "B's batch", foreign: () => ({ batchId: batchB }), unknown: () => ({ batchId: `b_${rnd(16)}` }), build: (i) => ({ method: 'GET', path: `/api/v1/batches/${i['batchId'] ?? ''}` }), expect: 'not_found' }],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/batches/${batchB}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.ok((a.body['snapshotIds'] as string[]).includes(snapB));
      },
    },
  },
  'GET /api/v1/timeline/record': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/timeline/record?${q({ collection: COL_B, recordId: b('b1').recordId, tenantId: tn })}` })],
    probes: [
      { name: "B's record", foreign: recordIds('b1'), unknown: unknownRecord, build: (i) => ({ method: 'GET', path: `/api/v1/timeline/record?${q({ collection: i['collection'], recordId: i['recordId'] })}` }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/timeline/record?${q({ collection: COL_B, recordId: b('b1').recordId })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(itemsOf(a)[0], { tenantId: B, recordHash: b('b1').recordHash, snapshotId: snapB });
      },
    },
  },
  'POST /api/v1/evidence/retrieval-controls': {
    named: [(tn) => ({ method: 'POST', path: '/api/v1/evidence/retrieval-controls', body: { tenantId: tn, records: [{ collection: COL_B, recordId: b('b1').recordId }] } })],
    probes: [
      {
        name: "B's records",
        foreign: () => ({ collection: COL_B, recordId: b('b1').recordId, database: DB_B, other: b('b2').recordId }),
        unknown: () => ({ collection: `bcol-${rnd()}`, recordId: `brec-u-${rnd()}`, database: `bdb-${rnd()}`, other: `brec-v-${rnd()}` }),
        build: (i) => ({
          method: 'POST',
          path: '/api/v1/evidence/retrieval-controls',
          body: { scope: 'payload', records: [{ collection: i['collection'], recordId: i['recordId'] }, { database: i['database'], collection: i['collection'], recordId: i['other'] }] },
        }),
        expect: 'no_decision',
      },
    ],
    allowed: {
      req: () => ({ method: 'POST', path: '/api/v1/evidence/retrieval-controls', body: { tenantId: B, records: [{ collection: COL_B, recordId: b('b1').recordId }] } }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { tenantId: B, allowed: 1, decisions: [{ found: true, decision: 'allowed' }] });
      },
    },
  },
  'GET /api/v1/receipts/record': {
    named: [(tn) => ({ method: 'GET', path: `/api/v1/receipts/record?${q({ tenantId: tn, collection: COL_B, recordId: b('b1').recordId })}` })],
    probes: [
      { name: "B's record", foreign: recordIds('b1'), unknown: unknownRecord, build: (i) => ({ method: 'GET', path: `/api/v1/receipts/record?${q({ collection: i['collection'], recordId: i['recordId'] })}` }), expect: 'not_found' },
      { name: "B's record with its payload", foreign: recordIds('b2'), unknown: unknownRecord, build: (i) => ({ method: 'GET', path: `/api/v1/receipts/record?${q({ collection: i['collection'], recordId: i['recordId'], includePayload: 'true' })}` }), expect: 'not_found' },
    ],
    allowed: {
      req: () => ({ method: 'GET', path: `/api/v1/receipts/record?${q({ tenantId: B, collection: COL_B, recordId: b('b1').recordId, includePayload: 'true' })}` }),
      check: (t, a) => {
        t.equal(a.status, 200);
        t.match(a.body, { tenantId: B, recordHash: b('b1').recordHash, salt: b('b1').salt, payload: b('b1').payload });
      },
    },
  },
};

function checkProbe(t: Test, p: Probe, foreign: Answer, unknown: Answer, foreignIds: Ids, unknownIds: Ids): void {
  const same = (): void => {
    t.same(normalized(foreign, foreignIds), normalized(unknown, unknownIds), "B's identifiers answer exactly as unknown ones");
  };
  switch (p.expect) {
    case 'not_found':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 404);
        t.equal(a.body['error'], 'not_found');
      }
      same();
      break;
    case 'verify_not_found':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 200);
        t.match(a.body, { verified: false, verificationStatus: 'fail', reasonCategory: 'not_found', tenantId: A });
      }
      same();
      break;
    case 'hash_not_found':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 200);
        t.match(a.body, { matches: 0, anchored: false, verificationStatus: 'fail', reasonCategory: 'not_found', tenantId: A, results: [] });
      }
      same();
      break;
    case 'no_decision':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 200);
        t.equal(a.body['tenantId'], A);
        const decisions = a.body['decisions'] as Json[];
        t.equal(decisions.length, 2);
        t.ok(decisions.every((d) => d['found'] === false && d['decision'] === 'denied' && d['reason'] === 'not_found'), 'every record is not found');
      }
      same();
      break;
    case 'empty':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 200);
        t.same(a.body['items'], []);
        t.equal(a.body['nextCursor'], null);
      }
      same();
      break;
    case 'accepted':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 202);
        if (Array.isArray(a.body['items'])) {
          t.equal(a.body['accepted'], a.body['total']);
          t.ok(itemsOf(a).every((i) => i['idempotencyReplayed'] !== true && i['tenantId'] === A), 'no item replayed, all of A');
          t.same(a.body['rejected'] ?? [], []);
        } else {
          t.equal(a.body['idempotencyReplayed'], false, 'not a replay');
          t.equal(a.body['tenantId'], A);
        }
      }
      break;
    case 'not_in_batch':
      for (const a of [foreign, unknown]) {
        t.equal(a.status, 200);
        t.match(a.body, { verified: false, verificationStatus: 'fail', reasonCategory: 'not_in_batch', tenantId: A, mode: 'batch' });
        t.notOk('merkleProof' in a.body || 'leafIndex' in a.body, 'no proof of a record that is not in the batch');
      }
      t.same(Object.keys(foreign.body).sort(), Object.keys(unknown.body).sort(), 'the same members as for an unknown record of a batch');
      break;
  }
}

// ---- tests -----------------------------------------------------------------------------------------

t.test('the matrix has one row per /api/v1 operation of the OpenAPI document', async (t) => {
  const doc = await request<{ paths: Record<string, Record<string, unknown>> }>(svc, 'GET', '/swagger/openapi.json');
  t.equal(doc.status, 200);
  const ops: string[] = [];
  for (const [path, item] of Object.entries(doc.body.paths)) {
    if (!path.startsWith('/api/v1/')) continue;
    for (const method of Object.keys(item)) if (['get', 'post', 'put', 'patch', 'delete'].includes(method)) ops.push(`${method.toUpperCase()} ${path}`);
  }
  t.ok(ops.length >= 16, `${ops.length} operations`);
  t.same([...ops].sort(), Object.keys(matrix).sort(), 'every operation has a row, and every row an operation');
  for (const [op, row] of Object.entries(matrix)) t.ok(row.named.length > 0 && row.probes.length > 0, `${op}: both cases`);
});

async function listingsOfA(t: Test, exempt: ReadonlySet<string>): Promise<void> {
  const listings = [`/api/v1/records?tenantId=${A}&limit=1000`, '/api/v1/snapshots?limit=1000', '/api/v1/verify/history?limit=1000', '/api/v1/audit/history?limit=1000'];
  for (const key of [keyA, keyAlso]) {
    for (const path of [...listings, ...listings.slice(1).map((p) => `${p}&tenantId=${A}`)]) {
      const a = await request<Json>(svc, 'GET', path, { key });
      t.equal(a.status, 200, path);
      const items = itemsOf(a as Answer);
      t.ok(items.length > 0, `${path}: A has entries`);
      t.ok(
        items.every((i) => i['tenantId'] === A),
        `${path}: every entry is A's`,
      );
      if (path.startsWith('/api/v1/audit')) t.ok(items.every((i) => keyIdsOfA.has(str((i['actor'] as Json)['keyId'])) || (i['actor'] as Json)['keyId'] === 'admin'), `${path}: every actor is A's`);
      t.same(leaks(answerText(a as Answer), exempt), [], `${path}: none of B's values`);
    }
  }
}

t.test("A's listings hold none of B's entries", (t) => listingsOfA(t, new Set()));

t.test('tenant A against tenant B on every route', async (t) => {
  const nobody = `tenant-${rnd(4)}`;
  for (const [op, row] of Object.entries(matrix)) {
    await t.test(op, async (t) => {
      for (const [i, named] of row.named.entries()) {
        const req = named(B);
        const a = await send(keyA, req);
        t.equal(a.status, 403, `named B (${i}): ${describe(req, a)}`);
        t.equal(a.body['error'], 'forbidden_tenant');
        const other = await send(keyA, named(nobody));
        t.same(normalized(a, { tenant: B }), normalized(other, { tenant: nobody }), 'as for a tenant that does not exist');
        t.same(leaks(answerText(a), exemptOf(req)), [], "none of B's values in the 403");
      }
      for (const p of row.probes) {
        const foreignIds = p.foreign();
        const unknownIds = p.unknown();
        const req = p.build(foreignIds);
        const foreign = await send(keyA, req);
        const unknown = await send(keyA, p.build(unknownIds));
        const exempt = exemptOf(req, foreignIds);
        for (const v of exempt) sentByA.add(v);
        t.comment(`${p.name}: ${describe(req, foreign)}`);
        checkProbe(t, p, foreign, unknown, foreignIds, unknownIds);
        t.same(leaks(answerText(foreign), exempt), [], `${p.name}: none of B's values beyond the request's own`);
      }
      const req = row.allowed.req();
      const a = await send(keyAlso, req);
      t.comment(`allowed: ${describe(req, a)}`);
      row.allowed.check(t, a);
    });
  }
});

t.test('a batch shared by A and B: A sees it, with its own snapshot only', async (t) => {
  const a = await send(keyA, { method: 'GET', path: `/api/v1/batches/${batchShared}` });
  t.equal(a.status, 200);
  t.same(a.body['snapshotIds'], [snapAShared]);
  // `previous` links the public hash chain of manifests (the manifest at /ipfs/{cid} holds it too).
  const manifest = await request<Json>(svc, 'GET', `/ipfs/${str(a.body['ipfsCid'])}`);
  t.equal(manifest.status, 200);
  t.same(a.body['previous'], manifest.body['previous'], '`previous` is exactly the public manifest link');
  const previous = a.body['previous'] as Json | null;
  t.comment(`previous: ${JSON.stringify(previous)}${previous !== null && secrets.has(str(previous['batchId'])) ? " (a batch of B's only)" : ''}`);
  const rest = { ...a, text: JSON.stringify({ ...a.body, previous: null }) };
  t.same(leaks(rest.text, new Set()), [], "none of B's values besides the public previous-manifest link");
  const also = await send(keyAlso, { method: 'GET', path: `/api/v1/batches/${batchShared}` });
  t.same([...(also.body['snapshotIds'] as string[])].sort(), [snapAShared, snapBShared].sort(), 'a key of both tenants sees both snapshots');
});

t.test("after the matrix, A's listings still hold none of B's entries", (t) => listingsOfA(t, sentByA));

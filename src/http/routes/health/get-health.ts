import typia from 'typia';
import type { PublicHealth } from '../../../app/health.js';
import type { Reply } from '../../router.js';
import { json, type ResponseSpec, route } from '../../route-spec.js';
import { api } from '../bind.js';

/** Health answers 503 unless every component is ok; the report is renewed every second. */
export function healthReply(report: { readonly status: string }): Reply {
  return report.status === 'ok' ? { status: 200, body: report } : { status: 503, body: report, headers: { 'Retry-After': '1' } };
}

export function degraded(schema: ResponseSpec): ResponseSpec {
  return { ...schema, description: 'A component is degraded or down (Retry-After: 1); the report says which. The front may also answer 503 with the error body when overloaded.', headers: ['Retry-After'] };
}

const ok = json('Every component is ok.', typia.json.schema<PublicHealth, '3.1'>());

export const GetHealth = route('GET /api/Admin/health', 'GetHealth', 'Health', 'System health; no API key', {
  auth: 'none',
  description: 'Component statuses and public facts only (version, roles, hash backend, chain id, contract, anchorer address). The detailed report is on the administration listener.',
  responses: { 200: ok, 503: degraded(ok) },
  bind: api((s) => async () => healthReply(await s.health.publicReport())),
});

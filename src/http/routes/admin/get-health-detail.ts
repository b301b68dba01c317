import typia from 'typia';
import type { HealthReport } from '../../../app/health.js';
import { json, route } from '../../route-spec.js';
import { admin } from '../bind.js';
import { degraded, healthReply } from '../health/get-health.js';

const ok = json('Every component is ok.', typia.json.schema<HealthReport, '3.1'>());

export const GetHealthDetail = route('GET /admin/v1/health', 'GetHealthDetail', 'Admin', 'The detailed health report (operators): adapters, latencies, reason codes', {
  listener: 'admin', auth: 'admin',
  responses: { 200: ok, 503: degraded(ok) },
  bind: admin((s) => async () => healthReply(await s.health.report())),
});

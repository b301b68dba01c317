import typia from 'typia';
import type { HealthReport } from '../../../app/health.js';
import { json, type RouteSpec } from '../../route-spec.js';
import { admin } from '../bind.js';
import { degraded, healthReply } from '../health/get-health.js';

const ok = json('Every component is ok.', typia.json.schema<HealthReport, '3.1'>());

export const GetHealthDetail: RouteSpec = {
  operationId: 'GetHealthDetail',
  method: 'GET',
  path: '/admin/v1/health',
  listener: 'admin',
  auth: 'admin',
  tag: 'Admin',
  summary: 'The detailed health report (operators): adapters, latencies, reason codes',
  responses: { 200: ok, 503: degraded(ok) },
  bind: admin((s) => async () => healthReply(await s.health.report())),
};

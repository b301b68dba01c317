import { CreateApiKey, ListApiKeys, RevokeApiKey, RotateApiKey } from './routes/admin/key-routes.js';
import { GetHealthDetail } from './routes/admin/get-health-detail.js';
import { GetRetrievalPolicy, PutRetrievalPolicy } from './routes/admin/policy-routes.js';
import { GetAuditHistory } from './routes/audit/get-audit-history.js';
import { GetBatch } from './routes/batches/get-batch.js';
import { OpenApiDocument, SwaggerAsset, SwaggerUi } from './routes/docs/docs-routes.js';
import { CheckRetrievalControls } from './routes/evidence/check-retrieval-controls.js';
import { GetHealth } from './routes/health/get-health.js';
import { GetIpfsContent } from './routes/ipfs/get-ipfs-content.js';
import { BulkIngestRecords } from './routes/records/bulk-ingest-records.js';
import { IngestRecord } from './routes/records/ingest-record.js';
import { QueryRecords } from './routes/records/query-records.js';
import { GetSnapshot } from './routes/snapshots/get-snapshot.js';
import { GetSnapshotLifecycle } from './routes/snapshots/get-snapshot-lifecycle.js';
import { ListSnapshots } from './routes/snapshots/list-snapshots.js';
import { RetrySnapshot } from './routes/snapshots/retry-snapshot.js';
import { GetRecordTimeline } from './routes/timeline/get-record-timeline.js';
import { GetRecordReceipt } from './routes/verify/get-record-receipt.js';
import { GetVerificationHistory } from './routes/verify/get-verification-history.js';
import { VerifyPayload } from './routes/verify/verify-payload.js';
import { VerifyRecord } from './routes/verify/verify-record.js';
import { VerifySnapshot } from './routes/verify/verify-snapshot.js';
import type { Route } from './router.js';
import type { BodyLimit, Listener, RouteSpec } from './route-spec.js';
import type { HttpServices } from './services.js';

/**
 * Every operation of dris, public and administrative: the one list the routers and the OpenAPI
 * document are both made from (openapi.ts), in the document's order.
 */
export const ROUTE_TABLE: readonly RouteSpec[] = [
  IngestRecord,
  BulkIngestRecords,
  QueryRecords,
  VerifyRecord,
  VerifyPayload,
  VerifySnapshot,
  GetVerificationHistory,
  GetRecordReceipt,
  ListSnapshots,
  GetSnapshot,
  GetSnapshotLifecycle,
  RetrySnapshot,
  GetBatch,
  GetRecordTimeline,
  GetAuditHistory,
  CheckRetrievalControls,
  GetHealth,
  GetIpfsContent,
  SwaggerUi,
  OpenApiDocument,
  SwaggerAsset,
  GetHealthDetail,
  CreateApiKey,
  ListApiKeys,
  RevokeApiKey,
  RotateApiKey,
  GetRetrievalPolicy,
  PutRetrievalPolicy,
];

/** The configured body limits, bytes. */
export interface BodyLimits {
  readonly record: number;
  readonly bulk: number;
}

function bytesOf(limit: BodyLimit, limits: BodyLimits): number {
  return limit === 'record' ? limits.record : limit === 'bulk' ? limits.bulk : limit.bytes;
}

/** The routes a listener serves in this process: those of the table whose services it has. */
export function routesOf(listener: Listener, services: HttpServices, limits: BodyLimits, table: readonly RouteSpec[] = ROUTE_TABLE): Route[] {
  const routes: Route[] = [];
  for (const spec of table) {
    if (spec.listener !== listener) continue;
    const handle = spec.bind(services);
    if (handle === null) continue;
    const route: Route = { method: spec.method, pattern: spec.path, operationId: spec.operationId, auth: spec.auth, handle };
    routes.push(spec.body === undefined ? route : { ...route, maxBodyBytes: bytesOf(spec.body.limit, limits) });
  }
  return routes;
}

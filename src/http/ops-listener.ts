import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReadinessReport } from '../app/readiness.js';
import { DrisError } from '../errors/dris-error.js';
import { componentLogger, type Logger } from '../util/logger.js';

/**
 * The ops listener: what probes, load balancers and Prometheus ask every dris process, whatever
 * its roles, on a port of its own (DRIS_OPS_HOST:DRIS_OPS_PORT), never on the public one.
 *
 *   GET /metrics  Prometheus text exposition
 *   GET /livez    200 while the event loop turns (answering is the proof)
 *   GET /readyz   200 when this process should get work; 503 with {status, failed?} otherwise
 *
 * A plain node:http server rather than the uWebSockets.js front: a few requests a second from
 * operators' tools, kept apart from the public listener's limits, guard and shutdown, so that
 * /readyz still answers 503 while the public listener drains, and /livez while it is saturated.
 * Answers name component names and states only: no URL, address, error text or version.
 */

export interface MetricsExposition {
  readonly contentType: string;
  /** The exposition text; every reading it makes has its own deadline. */
  render(): Promise<string>;
}

export interface ReadinessSource {
  check(): Promise<ReadinessReport>;
}

export interface OpsListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly metrics: MetricsExposition;
  readonly readiness: ReadinessSource;
  readonly logger?: Logger;
}

export interface OpsListener {
  readonly port: number;
  close(): Promise<void>;
}

/** A scrape or probe not answered within this long gets a 503 (Prometheus's own scrape timeout is 10 s). */
const ANSWER_DEADLINE_MS = 8000;
/** Operators' tools only: a few connections suffice, and more cannot pile up. */
const MAX_CONNECTIONS = 64;

type Answer = { readonly status: number; readonly contentType: string; readonly body: string };

const JSON_TYPE = 'application/json';

function json(status: number, body: unknown): Answer {
  return { status, contentType: JSON_TYPE, body: JSON.stringify(body) };
}

function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DrisError('timeout', 'the ops answer took too long')), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

class OpsHandler {
  /** One rendering at a time: concurrent scrapes share it rather than multiply the readings. */
  #rendering: Promise<string> | null = null;

  constructor(
    private readonly o: OpsListenerOptions,
    private readonly log: Logger,
  ) {}

  async answer(method: string, path: string): Promise<Answer> {
    if (path !== '/metrics' && path !== '/livez' && path !== '/readyz') return json(404, { error: 'route_not_found' });
    if (method !== 'GET' && method !== 'HEAD') return json(405, { error: 'method_not_allowed' });
    if (path === '/livez') return json(200, { status: 'alive' });
    try {
      if (path === '/readyz') {
        const r = await withDeadline(this.o.readiness.check(), ANSWER_DEADLINE_MS);
        return json(r.ready ? 200 : 503, r.failed === undefined ? { status: r.status } : { status: r.status, failed: r.failed });
      }
      this.#rendering ??= this.o.metrics.render().finally(() => {
        this.#rendering = null;
      });
      return { status: 200, contentType: this.o.metrics.contentType, body: await withDeadline(this.#rendering, ANSWER_DEADLINE_MS) };
    } catch (err) {
      this.log.warn({ err, path }, 'an ops answer failed');
      return path === '/readyz' ? json(503, { status: 'not_ready', failed: ['readiness_check'] }) : json(503, { error: 'metrics_unavailable' });
    }
  }
}

/** Resolves once bound; logs `ops listening` with the port (useful with port 0). */
export async function startOpsListener(o: OpsListenerOptions): Promise<OpsListener> {
  const log = o.logger ?? componentLogger('ops');
  const handler = new OpsHandler(o, log);
  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000, maxHeaderSize: 8192 }, (req, res) => {
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    // Nothing is read from a body: it is discarded as it comes.
    req.resume();
    void handler.answer(method, path).then((a) => {
      if (res.destroyed) return;
      const headers: http.OutgoingHttpHeaders = { 'content-type': a.contentType, 'content-length': Buffer.byteLength(a.body), 'cache-control': 'no-store' };
      if (a.status === 405) headers['allow'] = 'GET, HEAD';
      res.writeHead(a.status, headers);
      res.end(method === 'HEAD' ? undefined : a.body);
    }).catch((err: unknown) => {
      log.warn({ err }, 'an ops answer could not be written');
      res.destroy();
    });
  });
  server.maxConnections = MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(new DrisError('config_invalid', `cannot listen on ${o.host}:${o.port} (DRIS_OPS_HOST:DRIS_OPS_PORT)`, { cause: err }));
    server.once('error', onError);
    server.listen(o.port, o.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => log.error({ err }, 'ops listener error'));
  const port = (server.address() as AddressInfo).port;
  log.info({ host: o.host, port }, 'ops listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

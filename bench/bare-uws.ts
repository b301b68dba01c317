import uWS from 'uWebSockets.js';

/**
 * The physical baseline of bench:ingest: uWebSockets.js reading a JSON body and answering 202 with
 * a body of the same size as dris's, and nothing else. Port from argv[2]; prints `ready <port>`.
 * A GET answers 200: the cluster scenario puts it behind HAProxy, whose health check is a GET.
 */
const answer = JSON.stringify({
  recordId: 'r',
  recordHash: '0'.repeat(64),
  tenantId: 'bench',
  acceptedAt: new Date().toISOString(),
  idempotencyReplayed: false,
  payloadHash: '0'.repeat(64),
  salt: '0'.repeat(32),
  hashScheme: 'dris-v1',
  ingestId: '0'.repeat(26),
});
const port = Number(process.argv[2] ?? '0');
uWS
  .App()
  .post('/*', (res) => {
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    res.onData((_chunk, isLast) => {
      if (isLast && !aborted) {
        res.cork(() => {
          res.writeStatus('202 Accepted').writeHeader('Content-Type', 'application/json').end(answer);
        });
      }
    });
  })
  .get('/*', (res) => {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end('{"status":"ok"}');
  })
  .listen('127.0.0.1', port, (token) => {
    if (token === false) process.exit(1);
    process.stdout.write(`ready ${uWS.us_socket_local_port(token)}\n`);
  });

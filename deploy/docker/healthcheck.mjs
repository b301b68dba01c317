// Docker HEALTHCHECK: exit 0 when the ops listener's /livez answers 2xx within 2 s, else 1.
import http from 'node:http';

const port = Number(process.env.DRIS_OPS_PORT || '9464');
const req = http.get({ host: '127.0.0.1', port, path: '/livez', timeout: 2000 }, (res) => {
  res.resume();
  process.exit(res.statusCode >= 200 && res.statusCode < 300 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', () => process.exit(1));

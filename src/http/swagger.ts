import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DrisError } from '../errors/dris-error.js';
import type { Reply } from './router.js';

/** /swagger: Swagger UI served from the installed swagger-ui-dist package (no CDN). */

export interface SwaggerAssets {
  page(): Reply;
  document(): Reply;
  asset(file: string): Reply;
}

const ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dris API</title>
<link rel="stylesheet" href="/swagger/assets/swagger-ui.css"><link rel="icon" href="/swagger/assets/favicon-32x32.png"></head>
<body><div id="ui"></div>
<script src="/swagger/assets/swagger-ui-bundle.js"></script>
<script src="/swagger/assets/swagger-ui-standalone-preset.js"></script>
<script src="/swagger/assets/init.js"></script>
</body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '/swagger/openapi.json', dom_id: '#ui', presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });`;

export function swaggerAssets(openapi: Record<string, unknown>): SwaggerAssets {
  const require = createRequire(import.meta.url);
  const dir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const cache = new Map<string, Buffer>();
  const doc = JSON.stringify(openapi);
  return {
    page: () => ({ status: 200, body: PAGE, contentType: 'text/html; charset=utf-8' }),
    document: () => ({ status: 200, body: doc, contentType: 'application/json' }),
    asset: (file) => {
      if (file === 'init.js') return { status: 200, body: INIT, contentType: 'text/javascript; charset=utf-8' };
      const type = ASSETS[file];
      if (type === undefined) throw new DrisError('route_not_found', 'no such asset');
      let data = cache.get(file);
      if (data === undefined) {
        data = readFileSync(path.join(dir, file));
        cache.set(file, data);
      }
      return { status: 200, body: data, contentType: type, headers: { 'Cache-Control': 'public, max-age=86400' } };
    },
  };
}

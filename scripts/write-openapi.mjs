// Writes the OpenAPI document the service serves at /swagger/openapi.json to docs/openapi.json,
// from the compiled route table (run `npm run openapi`, which builds first). The test suite
// compares the two, so a change of the interface shows in review as a change of this file.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { buildOpenApi } = await import(path.join(root, 'dist/src/http/openapi.js'));
const { ROUTE_TABLE } = await import(path.join(root, 'dist/src/http/route-table.js'));
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const file = path.join(root, 'docs/openapi.json');
writeFileSync(file, JSON.stringify(buildOpenApi(ROUTE_TABLE, version), null, 2) + '\n');
console.log(`wrote ${path.relative(root, file)}`);

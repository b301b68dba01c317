/**
 * The layer rules of src/ (docs/architecture.md), checked on resolved imports, static and dynamic,
 * by `npm run lint` (and so by scripts/test.sh's lint step): a violation fails the build.
 *
 * - src/domain is pure: no adapter, HTTP, configuration, application or CLI code, no vendor client;
 *   typia only as types (its validators belong to the edges).
 * - src/app (use cases) imports no adapter and no HTTP.
 * - src/http (routes, server) imports no adapter.
 * - src/cli imports no adapter: it gets everything from the composition root (src/main.ts,
 *   src/composition/).
 * - nothing imports the composition root but the CLI.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'domain-is-pure',
      comment: 'src/domain imports neither adapters, HTTP, configuration, use cases, the CLI nor the composition root',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { path: '^src/(adapters|http|config|app|cli|composition)/|^src/main\\.ts$' },
    },
    {
      name: 'domain-no-vendor',
      comment: 'src/domain uses node built-ins only; typia only through `import type`',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'domain-vendor-types-typia-only',
      comment: 'the only vendor whose types src/domain may name is typia (its tags annotate the wire types)',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: 'node_modules/typia/' },
    },
    {
      name: 'app-no-adapters-no-http',
      comment: 'use cases reach technology through ports only, and know nothing of HTTP',
      severity: 'error',
      from: { path: '^src/app/' },
      to: { path: '^src/(adapters|http|cli|composition)/|^src/main\\.ts$' },
    },
    {
      name: 'http-no-adapters',
      comment: 'routes and the server reach technology through the use cases and ports the composition root hands them',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: '^src/(adapters|cli|composition)/|^src/main\\.ts$' },
    },
    {
      name: 'cli-no-adapters',
      comment: 'the CLI gets its dependencies from the composition root, as `dris serve` does',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^src/adapters/' },
    },
    {
      name: 'adapters-not-to-outer',
      comment: 'an adapter implements a port: it imports no use case, route, CLI or composition root',
      severity: 'error',
      from: { path: '^src/adapters/' },
      to: { path: '^src/(http|cli|composition)/|^src/main\\.ts$' },
    },
    {
      name: 'no-circular',
      comment: 'src/ has no import cycles',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Type-only imports are dependencies too: a domain file naming an adapter's type is a violation.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { bootstrapSql, migrations } from '../../src/adapters/clickhouse/migrations/index.js';

/**
 * Released migrations never change: a database applies each version once, so a version's text
 * must stay what databases already ran. fixtures/clickhouse-migrations.sql holds every statement
 * as released; a new migration is appended to it, and nothing above may differ.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
// Run from dist/test/unit; the fixture stays in the source tree.
const fixture = readFileSync(path.resolve(here, '../../../test/unit/fixtures/clickhouse-migrations.sql'), 'utf8');

/** The fixture's statements by heading (`bootstrap N`, `migration V: name`). */
function statements(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const block of text.split('\n-- ')) {
    const nl = block.indexOf('\n');
    const heading = block.slice(0, nl);
    if (/^(bootstrap \d+|migration \d+: .+)$/.test(heading)) out.set(heading, block.slice(nl + 1).replace(/;\n*$/, ''));
  }
  return out;
}

void t.test('every released statement is unchanged, byte for byte', (t) => {
  const released = statements(fixture);
  const current = new Map<string, string>();
  bootstrapSql('dris').forEach((sql, i) => current.set(`bootstrap ${i + 1}`, sql));
  for (const m of migrations('dris')) current.set(`migration ${m.version}: ${m.name}`, m.sql);
  t.ok(released.size >= 25, 'the fixture lists the bootstrap and 23 migrations');
  for (const [heading, sql] of released) t.equal(current.get(heading), sql, heading);
  t.same([...current.keys()].slice(0, released.size), [...released.keys()], 'in the same order, none left out');
  t.end();
});

void t.test('versions ascend without gaps from 1', (t) => {
  const versions = migrations('dris').map((m) => m.version);
  t.same(versions, Array.from({ length: versions.length }, (_, i) => i + 1));
  t.end();
});

void t.test('the database name is the only text spliced in', (t) => {
  const other = migrations('other_db');
  migrations('dris').forEach((m, i) => t.equal(other[i]?.sql, m.sql.replaceAll('dris.', 'other_db.'), m.name));
  t.end();
});

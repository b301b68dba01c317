import t from 'tap';
import { parseOptions, type OptionSpec } from '../../bench/lib/options.js';
import { isBenchRefusal } from '../../bench/lib/refusal.js';

const specs: OptionSpec[] = [
  { name: 'duration', kind: 'number', default: 10, unit: 's', help: '' },
  { name: 'warmup', kind: 'number', default: 2, min: 0, help: '' },
  { name: 'connections', kind: 'integer', default: 64, help: '' },
  { name: 'modes', kind: 'list', default: ['embedded'], choices: ['embedded', 'nats-redis'], help: '' },
  { name: 'sweep', kind: 'flag-or-numbers', help: '' },
  { name: 'html', kind: 'flag-or-string', help: '' },
  { name: 'pin', kind: 'boolean', default: true, help: '' },
  { name: 'out', kind: 'string', help: '' },
];

function refused(t: { ok(v: unknown, m: string): unknown; fail(m: string): unknown }, argv: string[]): void {
  try {
    parseOptions(argv, specs);
    t.fail(`${argv.join(' ')} should be refused`);
  } catch (e) {
    t.ok(isBenchRefusal(e), `${argv.join(' ')} refused as a usage error`);
  }
}

t.test('defaults apply and given options are converted by kind', (t) => {
  const d = parseOptions([], specs);
  t.same(d.values, { duration: 10, warmup: 2, connections: 64, modes: ['embedded'], sweep: undefined, html: undefined, pin: true, out: undefined });
  const p = parseOptions(['--duration', '3.5', '--warmup=0', '--modes', 'embedded,nats-redis', '--no-pin', '--out', 'x.json', 'extra'], specs);
  t.equal(p.values['duration'], 3.5);
  t.equal(p.values['warmup'], 0);
  t.same(p.values['modes'], ['embedded', 'nats-redis']);
  t.equal(p.values['pin'], false);
  t.equal(p.values['out'], 'x.json');
  t.same(p.positionals, ['extra']);
  t.same(p.given, ['duration', 'warmup', 'modes', 'pin', 'out']);
  t.end();
});

t.test('--sweep alone is automatic, with numbers a list; --html alone or with a file', (t) => {
  t.equal(parseOptions(['--sweep', '--duration', '5'], specs).values['sweep'], true);
  t.equal(parseOptions(['--sweep'], specs).values['sweep'], true);
  t.same(parseOptions(['--sweep', '500,1000,2000'], specs).values['sweep'], [500, 1000, 2000]);
  t.equal(parseOptions(['--html'], specs).values['html'], true);
  t.equal(parseOptions(['--html', 'r.html'], specs).values['html'], 'r.html');
  t.equal(parseOptions(['--html', '--pin'], specs).values['html'], true);
  t.end();
});

t.test('unknown options, missing or malformed values are refused before anything runs', (t) => {
  refused(t, ['--durration', '5']);
  refused(t, ['--duration']);
  refused(t, ['--duration', 'abc']);
  refused(t, ['--duration', '0']);
  refused(t, ['--duration', '-3']);
  refused(t, ['--warmup', '-1']);
  refused(t, ['--connections', '2.5']);
  refused(t, ['--modes', 'embedded,kafka']);
  refused(t, ['--sweep', '100,abc']);
  refused(t, ['--pin=maybe']);
  refused(t, ['--duration', '--warmup', '1']);
  t.end();
});

import t from 'tap';
import { appendIndex, appendKey, formatPath, isPathWithin } from '../../src/domain/hashing/json-path.js';

t.test('format', async (t) => {
  t.equal(formatPath('records', [2, 'recordPayload', 'a', 'b c', 0]), 'records[2].recordPayload.a["b c"][0]');
  t.equal(formatPath('', ['a', 'b']), 'a.b');
  t.equal(formatPath('', [0, 'x']), '[0].x');
  t.equal(formatPath('', []), '');
  t.equal(appendKey('', '$_x9'), '$_x9');
  t.equal(appendKey('a', '9x'), 'a["9x"]');
  t.equal(appendKey('a', ''), 'a[""]');
  t.equal(appendKey('a', 'é'), 'a["é"]');
  t.equal(appendKey('a', 'q"\\\n'), 'a["q\\"\\\\\\n"]');
  t.equal(appendKey('a', '\ud800'), 'a["\\ud800"]');
  t.equal(appendKey('a', '\u0001'), 'a["\\u0001"]');
  t.equal(appendIndex('a', 3), 'a[3]');
});

t.test('within', async (t) => {
  t.ok(isPathWithin('recordPayload', 'recordPayload'));
  t.ok(isPathWithin('recordPayload.a', 'recordPayload'));
  t.ok(isPathWithin('recordPayload["a b"]', 'recordPayload'));
  t.notOk(isPathWithin('recordPayloadX', 'recordPayload'));
  t.notOk(isPathWithin('records[1]', 'records[10]'));
  t.ok(isPathWithin('anything', ''));
});

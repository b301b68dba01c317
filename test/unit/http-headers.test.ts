import t from 'tap';
import { headerValue } from '../../src/http/uws-server.js';

void t.test('a header value never carries a line break into the header block', (t) => {
  t.equal(headerValue('attachment; filename="a.json"'), 'attachment; filename="a.json"');
  t.equal(headerValue('a\r\nSet-Cookie: x=1'), 'a Set-Cookie: x=1');
  t.equal(headerValue('a\nb\rc'), 'a b c');
  t.equal(headerValue(''), '');
  t.end();
});

import t from 'tap';
import { hashThreadsFor } from '../../src/composition/open-hashing.js';

void t.test('the configured hashing threads, none on one CPU or when set to 0', (t) => {
  t.equal(hashThreadsFor(2, 2), 2);
  t.equal(hashThreadsFor(2, 8), 2);
  t.equal(hashThreadsFor(0, 8), 0, 'inline only by configuration');
  t.equal(hashThreadsFor(2, 1), 0, 'one CPU: inline');
  t.equal(hashThreadsFor(4, 0), 0, 'an affinity read as none');
  t.end();
});

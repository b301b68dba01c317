import t from 'tap';
import { RewindWatch } from '../../src/adapters/chain/rewind-watch.js';

void t.test('a chain moving forward raises no suspicion, and its marks follow it', (t) => {
  const w = new RewindWatch();
  t.equal(w.observe(10, 0), null, 'first read');
  w.noteMined(0, 11);
  w.noteMined(1, 12);
  t.equal(w.observe(12, 2), null, 'the head and the mined count where ours left them');
  t.equal(w.observe(15, 5), null, 'ahead: blocks mined, or another sender used the key');
  t.equal(w.headBehind(15), false);
  t.equal(w.headBehind(16), false);
  t.end();
});

void t.test('a head lower than one seen is a suspicion, whatever the nonce says', (t) => {
  const w = new RewindWatch();
  t.equal(w.observe(20, 3), null);
  t.same(w.observe(18, 3), { head: 18, highestHead: 20, accountNonce: 3, minedCount: 3 });
  t.equal(w.headBehind(19), true, 'a head read on its own is compared with the same mark');
  t.end();
});

void t.test('a mined count lower than a nonce of ours seen mined is a suspicion, even with the head as high as before', (t) => {
  const w = new RewindWatch();
  w.noteMined(7, 30);
  t.same(w.observe(31, 7), { head: 31, highestHead: 30, accountNonce: 7, minedCount: 8 }, 'nonce 7 was mined: the count cannot be 7');
  t.end();
});

void t.test('a suspicion leaves the marks as they were; a rewind confirmed makes the chain as it stands the mark', (t) => {
  const w = new RewindWatch();
  w.noteMined(4, 50);
  t.not(w.observe(45, 2), null);
  t.not(w.observe(45, 2), null, 'still suspected: nothing confirmed it yet');
  w.rewound(45, 2);
  t.equal(w.observe(45, 2), null, 'once confirmed, the same reads are the mark');
  t.equal(w.headBehind(45), false);
  w.noteMined(2, 46);
  t.equal(w.observe(46, 3), null, 'and the chain moves on from there');
  t.not(w.observe(46, 2), null, 'a loss after the rewind is found again');
  t.end();
});

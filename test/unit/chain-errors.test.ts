import { makeError } from 'ethers';
import t from 'tap';
import { translateChainError } from '../../src/adapters/chain/chain-errors.js';

/** How the chain adapter's vendor errors become codes: what is worth retrying says so. */

t.test('a request cancelled because its provider was destroyed is a dependency outage, not an internal error', async (t) => {
  const err = makeError('provider destroyed; cancelled request', 'UNSUPPORTED_OPERATION', { operation: 'eth_call' });
  t.equal(translateChainError(err, 'reading the last sequence').code, 'dependency_unavailable');
});

t.test('other unsupported operations stay internal errors', async (t) => {
  const err = makeError('network does not support ENS', 'UNSUPPORTED_OPERATION', { operation: 'getEnsAddress' });
  t.equal(translateChainError(err, 'resolving a name').code, 'internal_error');
});

t.test('network failures and timeouts', async (t) => {
  t.equal(translateChainError(makeError('gone', 'NETWORK_ERROR', { event: 'x' }), 'x').code, 'dependency_unavailable');
  t.equal(translateChainError(makeError('slow', 'TIMEOUT', { operation: 'x', reason: 'timeout' }), 'x').code, 'timeout');
});

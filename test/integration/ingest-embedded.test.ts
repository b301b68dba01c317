import t from 'tap';
import { ingestSuite } from './ingest-suite.js';

// The one-machine default: no URL configured, every port on its embedded adapter.
ingestSuite(t, { name: 'embedded', env: () => Promise.resolve({}) });

/**
 * Imported first by the CLI: libuv sizes its thread pool on first use, and dris shares that pool
 * between chDB's asynchronous queries and the queue log's writes and fdatasync. With the default
 * four threads a few long index inserts would make every 202 wait for them. UV_THREADPOOL_SIZE
 * set in the environment is kept (README, "Configuration"); this module is the one place that
 * writes the environment, before anything has read it.
 */
process.env['UV_THREADPOOL_SIZE'] ??= '16';
export {};

/**
 * The service's entry point (`npm start`, the image's CMD): sizes libuv's thread pool, then
 * starts `main.js`.
 *
 * Every argon2id verification runs on a thread of libuv's pool and needs 19 MiB; glibc keeps
 * those pages in that thread's arena once the hash is done, so the resident set grows by 19 MiB
 * per pool thread that ever hashed. libuv's default pool has 4 threads: on a machine with fewer
 * cores the extra threads add memory and no throughput (argon2id is CPU-bound).
 *
 * The pool reads `UV_THREADPOOL_SIZE` when it starts, at the first file read, DNS lookup or
 * hash, and on Node 20 loading an ES module is such a read: the variable must be set before any
 * ES module loads, hence this small CommonJS file. An operator's own `UV_THREADPOOL_SIZE` wins.
 */
import os = require('node:os');

/**
 * One pool thread per core; at least 2, so that a system DNS lookup (the stores' connections
 * use getaddrinfo, which holds one while a resolver hangs; outbound requests do not:
 * `src/outbound/host-lookup.ts`) never stops every hash; at most libuv's default 4.
 */
function threadPoolSize(cores = os.availableParallelism()): number {
  return Math.max(2, Math.min(4, cores));
}

if (require.main === module) {
  process.env.UV_THREADPOOL_SIZE ||= String(threadPoolSize());
  void import('./main.js');
}

export = { threadPoolSize };

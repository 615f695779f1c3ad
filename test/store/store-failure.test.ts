/**
 * Store failures: which errors mean "the store did not answer", and the breaker that keeps a
 * hung store from costing every request its full timeout. The errors here are the ones the
 * drivers raise (the fault tests in test/http/store-faults.test.ts raise them for real).
 */
import { describe, expect, test } from '@jest/globals';
import { StoreUnavailableError } from '../../src/errors.js';
import { HUNG_PAUSE_MS, isStoreFailure, storeGuard } from '../../src/store/store-failure.js';
import type { StoreGuard } from '../../src/store/store-failure.js';
import { privateRedis } from '../helpers/redis-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('isStoreFailure', () => {
  test.each<[string, unknown]>([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['a pool that cannot connect in time', new Error('timeout exceeded when trying to connect')],
    ['a query the client gave up on', new Error('Query read timeout')],
    ['a lost connection', new Error('Connection terminated unexpectedly')],
    ['statement_timeout (57014)', withCode('canceling statement due to statement timeout', '57014')],
    ['admin shutdown (57P01)', withCode('terminating connection due to administrator command', '57P01')],
    ['too many connections (53300)', withCode('sorry, too many clients already', '53300')],
    ['a Redis command timeout', new Error('Command timed out')],
    ['Redis without a connection', new Error("Stream isn't writeable and enableOfflineQueue options is false")],
    ['a rate limiter on Redis without a connection', new Error('Redis connection is not ready')],
    ['a wrapped cause', new Error('query failed', { cause: new Error('Connection terminated due to connection timeout') })],
    ['a Prisma driver-adapter error', Object.assign(new Error('DriverAdapterError'), { cause: { kind: 'DatabaseNotReachable' } })],
    ['a Prisma known request error with the adapter error in meta', Object.assign(new Error('x'), { code: 'P2010', meta: { driverAdapterError: { cause: { kind: 'postgres', code: '08006' } } } })],
  ])('%s is a store failure', (_, error) => {
    expect(isStoreFailure(error)).toBe(true);
  });

  test.each<[string, unknown]>([
    ['a unique violation', withCode('duplicate key value violates unique constraint', '23505')],
    ['a Prisma record-not-found', withCode('No record was found', 'P2025')],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['not an error at all', 'oops'],
  ])('%s is not', (_, error) => {
    expect(isStoreFailure(error)).toBe(false);
  });
});

describe('storeGuard', () => {
  const hung = () => Promise.reject(new Error('Query read timeout'));
  const refused = () => Promise.reject(withCode('connect ECONNREFUSED', 'ECONNREFUSED'));
  const answers = () => Promise.resolve('row');

  test('a store failure comes out as StoreUnavailableError (503), other errors as they are', async () => {
    const guard = storeGuard('database');
    await expect(guard(refused)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(guard(() => Promise.reject(new TypeError('bug')))).rejects.toBeInstanceOf(TypeError);
    await expect(guard(answers)).resolves.toBe('row'); // a refusal opens no breaker
  });

  test('after a timeout, calls fail at once for a moment; then one probe at a time; an answer closes it', async () => {
    const guard = storeGuard('database', 100);
    await expect(guard(hung)).rejects.toBeInstanceOf(StoreUnavailableError);
    let called = false;
    await expect(guard(() => { called = true; return answers(); })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(called).toBe(false);

    await sleep(120);
    let release!: (value: string) => void;
    const probe = guard(() => new Promise<string>((resolve) => { release = resolve; }));
    await expect(guard(answers)).rejects.toBeInstanceOf(StoreUnavailableError); // one probe at a time
    release('row');
    await expect(probe).resolves.toBe('row');
    await expect(guard(answers)).resolves.toBe('row');
  });

  test('a probe that fails again keeps the breaker open; the default pause is a second', async () => {
    expect(HUNG_PAUSE_MS).toBe(1000);
    const guard = storeGuard('redis', 50);
    await expect(guard(hung)).rejects.toMatchObject({ store: 'redis', statusCode: 503, error: 'temporarily_unavailable' });
    await sleep(60);
    await expect(guard(refused)).rejects.toBeInstanceOf(StoreUnavailableError);
    let called = false;
    await expect(guard(() => { called = true; return answers(); })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(called).toBe(false);
  });
});

describe('a call bound from the moment it is made (callTimeoutMs: Redis)', () => {
  const COMMAND_MS = 300;
  const stores = privateRedis(COMMAND_MS);

  /** A command queued while an earlier auto-pipeline waits on a hung Redis: how long its caller waits. */
  async function queuedBehindHung(guard: StoreGuard) {
    stores.server.pause();
    try {
      const first = guard(() => stores.redis.get('first')).catch((error: unknown) => error);
      await sleep(50); // the first pipeline is written; ioredis holds the next until it answers
      const started = Date.now();
      const error = await guard(() => stores.redis.get('second')).catch((caught: unknown) => caught);
      const ms = Date.now() - started;
      await first;
      return { ms, error };
    } finally {
      stores.server.resume();
    }
  }

  test('ioredis alone: the queued command waits for the hung one, then its own timeout', async () => {
    const { ms } = await queuedBehindHung(storeGuard('redis', 60_000));
    expect(ms).toBeGreaterThanOrEqual(2 * COMMAND_MS - 100);
  });

  /**
   * Makes a guarded PING in a callback of the loop's check phase (as in one of its I/O
   * callbacks), then holds the loop (a starved CPU, a long collection, a large body parsed)
   * until `stallMs` after the call, starting right after the command is written (ioredis writes
   * its auto-pipeline from a setImmediate of its own, queued just before ours) or, with
   * `beforeWrite`, before it is. Redis answers meanwhile; the loop's next turn runs its due
   * timers, the bound's among them, before it reads the answer waiting in the socket.
   */
  function pingThroughStall(guard: StoreGuard, stallMs: number, beforeWrite = false) {
    return new Promise<{ answer: Promise<string> }>((resolve) => setImmediate(() => {
      const started = performance.now();
      const call = guard(() => stores.redis.ping());
      const stall = () => {
        while (performance.now() - started < stallMs) { /* stalled */ }
        resolve({ answer: call });
      };
      if (beforeWrite) stall();
      else setImmediate(stall);
    }));
  }

  test('an answer waiting in the socket when the bound\'s timer fires is an answer, not a timeout', async () => {
    const guard = storeGuard('redis', 60_000, COMMAND_MS);
    // Just past the bound (the timer on time, give or take), then well past it (not past the
    // client's backstop, twice the bound).
    for (const stallMs of [COMMAND_MS + 2, COMMAND_MS + 150]) {
      const { answer } = await pingThroughStall(guard, stallMs);
      await expect(answer).resolves.toBe('PONG');
    }
    await expect(guard(() => stores.redis.get('after-stall'))).resolves.toBeNull(); // the breaker stayed closed
  });

  test('a call made just before the process stalled past the bound still gets its answer', async () => {
    const guard = storeGuard('redis', 60_000, COMMAND_MS);
    for (const stallMs of [COMMAND_MS + 20, COMMAND_MS + 150]) {
      const { answer } = await pingThroughStall(guard, stallMs, true);
      await expect(answer).resolves.toBe('PONG');
    }
    await expect(guard(() => stores.redis.get('after-stall'))).resolves.toBeNull();
  });

  test('bound by the guard: one timeout from when it was made, a 503, and the breaker open', async () => {
    await sleep(500); // the previous test's commands have settled
    const guard = storeGuard('redis', 60_000, COMMAND_MS);
    const { ms, error } = await queuedBehindHung(guard);
    expect(ms).toBeLessThan(2 * COMMAND_MS); // not the double wait (≥ 3 × COMMAND_MS, the client's timer being a backstop at twice it)
    expect(error).toBeInstanceOf(StoreUnavailableError);
    let called = false;
    await expect(guard(() => { called = true; return stores.redis.get('third'); })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(called).toBe(false);
  });
});

describe('a Redis that answers but refuses to serve (an error reply, not a lost connection)', () => {
  const stores = privateRedis(1000);

  test('out of memory (maxmemory, no eviction): a command, a script and a MULTI are each a 503; a wrong-type reply stays itself', async () => {
    const guard = storeGuard('redis', 60_000, 1000);
    await stores.redis.set('text', 'not a counter');
    await stores.redis.config('SET', 'maxmemory-policy', 'noeviction');
    await stores.redis.config('SET', 'maxmemory', '1');
    try {
      const refusals = [
        () => stores.redis.set('k', 'v'),
        () => stores.redis.eval("return redis.call('set', KEYS[1], 'v')", 1, 'k'),
        () => stores.redis.multi().set('k', 'v').incr('n').exec(),
      ];
      for (const refused of refusals) {
        const error = await guard(refused).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(String((error as Error).cause)).toMatch(/OOM|EXECABORT/);
      }
      await expect(guard(() => stores.redis.get('text'))).resolves.toBe('not a counter'); // reads still served; no breaker opened
    } finally {
      await stores.redis.config('SET', 'maxmemory', '0');
    }
    // A reply about the request itself (our bug, not the store's state) is not a store failure.
    const wrongType = await guard(() => stores.redis.hget('text', 'field')).catch((caught: unknown) => caught);
    expect(wrongType).not.toBeInstanceOf(StoreUnavailableError);
    expect(String(wrongType)).toMatch(/WRONGTYPE/);
  });

  test.each(['LOADING Redis is loading the dataset in memory', 'BUSY Redis is busy running a script.', 'READONLY You can\'t write against a read only replica.',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to \'no\'.', 'MISCONF Redis is configured to save RDB snapshots, but it\'s currently unable to persist to disk.',
    'NOREPLICAS Not enough good replicas to write.', 'TRYAGAIN Multiple keys request during rehashing of slot', 'CLUSTERDOWN The cluster is down'])('%s is a store failure', (message) => {
    expect(isStoreFailure(Object.assign(new Error(message), { name: 'ReplyError' }))).toBe(true);
    expect(isStoreFailure(Object.assign(new Error('ERR unknown command'), { name: 'ReplyError' }))).toBe(false);
  });
});

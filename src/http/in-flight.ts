/**
 * Requests in flight, for a drained shutdown. The HTTP server only knows connections: a request
 * whose client hung up has no connection left but its handler still runs (and still uses the
 * stores). This counts handlers, from the first middleware to the last, so shutdown can wait for
 * every one of them before it closes the pools.
 *
 * While draining, every response says `Connection: close`, so keep-alive clients open their
 * next connection elsewhere instead of racing the listener's close.
 *
 * @example const inFlight = trackInFlight(); app.use(inFlight.middleware); …; inFlight.startDraining(); await inFlight.settled(10_000);
 */
import type { Middleware } from 'koa';

export interface InFlight {
  readonly middleware: Middleware;
  /** Handlers running now. */
  readonly count: number;
  readonly draining: boolean;
  startDraining(): void;
  /** Resolves true once nothing is in flight, or false after `timeoutMs` with some still running. */
  settled(timeoutMs: number): Promise<boolean>;
}

export function trackInFlight(): InFlight {
  let count = 0;
  let draining = false;
  let waiters: (() => void)[] = [];

  const done = () => {
    count -= 1;
    if (count > 0) return;
    const woken = waiters;
    waiters = [];
    for (const wake of woken) wake();
  };

  return {
    async middleware(ctx, next) {
      count += 1;
      try {
        if (draining) ctx.set('Connection', 'close');
        await next();
      } finally {
        if (draining) ctx.set('Connection', 'close');
        done();
      }
    },
    get count() { return count; },
    get draining() { return draining; },
    startDraining() { draining = true; },
    settled(timeoutMs) {
      if (count === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((wake) => wake !== onIdle);
          resolve(false);
        }, timeoutMs);
        const onIdle = () => {
          clearTimeout(timer);
          resolve(true);
        };
        waiters.push(onIdle);
      });
    },
  };
}

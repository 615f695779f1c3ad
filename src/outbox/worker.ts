/**
 * The worker every outbox shares (webhook events, back-channel logouts, mails), one per process
 * and outbox. It claims due messages with a lease (the outbox's `claim`: `FOR UPDATE SKIP
 * LOCKED`, so instances never take the same message), runs each message's attempt, at most
 * `concurrency` at once, and claims again as attempts end. It wakes at once when this process
 * writes a message, and otherwise when the next pending message falls due, at least every
 * `pollMs` (other instances' messages, expired leases). On stop it claims nothing more, aborts
 * the attempts in flight (`signal`), waits for them and gives back what it still holds.
 *
 * What an attempt is, and how its outcome is recorded, is the outbox's own (webhooks/delivery.ts
 * for HTTP deliveries, mail/mail-outbox.ts for mails).
 *
 * @example const worker = createOutboxWorker({ outbox, attempt, clock, log, leaseMs }); worker.start(); await worker.stop();
 */
import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

export interface OutboxWorker {
  start(): void;
  /** Runs a cycle now (a message was just written). */
  wake(): void;
  /** Stops claiming, aborts attempts in flight and gives their messages back. */
  stop(): Promise<void>;
}

/** The leases of an outbox: what the worker needs of it, whatever its messages are. */
export interface Leases<M extends { id: string }> {
  /** Leases up to `limit` due messages to `owner` until `leaseUntil`. */
  claim(owner: string, limit: number, now: Date, leaseUntil: Date): Promise<M[]>;
  /** Gives back every message this owner holds, untried (shutdown). */
  release(owner: string): Promise<number>;
  /** When the next pending message becomes claimable, if any. */
  nextDue(): Promise<Date | undefined>;
}

export interface OutboxWorkerDependencies<M extends { id: string }> {
  outbox: Leases<M>;
  /**
   * One attempt at `message`, held by `owner`: sends it and records the outcome (a record made
   * only while `owner` still holds it). `signal` aborts when the worker stops.
   */
  attempt: (message: M, owner: string, signal: AbortSignal) => Promise<void>;
  clock: () => Date;
  log: (error: unknown) => void;
  /** How long a claim holds a message: longer than any attempt, so no other worker takes it meanwhile. */
  leaseMs: number;
  pollMs?: number;
  concurrency?: number;
}

export function createOutboxWorker<M extends { id: string }>(deps: OutboxWorkerDependencies<M>): OutboxWorker {
  const { outbox, clock, log, leaseMs } = deps;
  const pollMs = deps.pollMs ?? 1000;
  const concurrency = deps.concurrency ?? 8;
  const owner = randomUUID();
  const inFlight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  let timer: NodeJS.Timeout | undefined;
  let cycle: Promise<void> | undefined;
  let again = false;
  let started = false;
  let stopped = false;

  function schedule(delayMs: number) {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(runDetached, Math.max(0, delayMs));
    timer.unref();
  }

  function run() {
    if (stopped) return;
    if (cycle) {
      again = true;
      return;
    }
    cycle = claimAndSend()
      .catch((error) => { log(error); })
      .finally(() => {
        cycle = undefined;
        if (again) {
          again = false;
          schedule(0);
        }
      });
  }

  // Woken from a request, the worker still runs in its own async context (the one it was made
  // in), not the request's: it outlives the request and is none of its work.
  const runDetached = AsyncResource.bind(run);

  async function claimAndSend() {
    const free = concurrency - inFlight.size;
    if (free > 0) {
      const now = clock();
      const claimed = await outbox.claim(owner, free, now, new Date(now.getTime() + leaseMs));
      if (stopped) return; // stop() releases what was just claimed
      for (const message of claimed) launch(message);
      if (claimed.length === free) again = true;
    }
    if (stopped) return;
    const due = await outbox.nextDue();
    const wait = due ? due.getTime() - clock().getTime() : pollMs;
    // A message due now but not claimable (leased elsewhere, or all slots busy) is retried soon, not in a spin.
    schedule(Math.min(pollMs, Math.max(inFlight.size >= concurrency ? pollMs : 25, wait)));
  }

  function launch(message: M) {
    const abort = new AbortController();
    const done = deps.attempt(message, owner, abort.signal)
      .catch((error) => { log(error); })
      .finally(() => {
        inFlight.delete(message.id);
        run();
      });
    inFlight.set(message.id, { abort, done });
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      schedule(0);
    },
    wake() {
      if (!started) return;
      // A cycle under way may have claimed before the new message was committed, and its closing
      // schedule() would replace a timer set now: have it run once more instead.
      if (cycle) again = true;
      else schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      for (const { abort } of inFlight.values()) abort.abort();
      await cycle;
      await Promise.allSettled([...inFlight.values()].map((flight) => flight.done));
      if (started) await outbox.release(owner).catch(log);
    },
  };
}

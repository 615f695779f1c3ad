/**
 * The delivery worker, one per app process. It claims due messages from the outbox, sends
 * each (signed afresh, see signing.ts), and records the outcome: 2xx delivered; 410 disables
 * the endpoint; anything else is retried on the schedule of retry-schedule.ts, then failed.
 * It wakes at once when this process raises an event, and otherwise when the next pending
 * message falls due, at least every `pollMs` (other instances' events, expired leases).
 * Back-channel logout tokens go through the same worker over an outbox of their own
 * (backchannel-logouts.ts), with `prepare` making each attempt's request.
 *
 * @example const worker = createDeliveryWorker({ outbox, clock, ... }); worker.start(); await worker.stop();
 */
import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Claimed, Outbox, Outcome } from './outbox.js';
import { retryDelayMs } from './retry-schedule.js';
import type { AttemptResult } from './send.js';
import { signedHeaders, signingSecrets } from './signing.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';

export interface DeliveryWorker {
  start(): void;
  /** Runs a cycle now (an event was just written). */
  wake(): void;
  /** Stops claiming, aborts attempts in flight and gives their messages back. */
  stop(): Promise<void>;
}

/** A message as claimed: where it goes and how often it was tried. */
export interface Message {
  id: string;
  url: string;
  attempts: number;
}

/** One attempt's request. */
export interface AttemptRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface WorkerDependencies<M extends Message = Claimed> {
  outbox: Outbox<M>;
  /** The request of one attempt, made afresh each time (default: a webhook event, signed). */
  prepare?: (message: M, at: Date) => Promise<AttemptRequest> | AttemptRequest;
  clock: () => Date;
  policy: NetworkPolicy;
  retryBaseMs: number;
  send: (request: AttemptRequest, policy: NetworkPolicy, timeoutMs: number, signal: AbortSignal) => Promise<AttemptResult>;
  log: (error: unknown) => void;
  /** The whole attempt's time limit (default 10 s). */
  attemptTimeoutMs?: number;
  /**
   * How long a claim holds a message (default 6 × the attempt's limit): longer than any attempt,
   * so no other worker takes a message while it is being sent; after a crash, how long the
   * message waits before it is sent again.
   */
  leaseMs?: number;
  pollMs?: number;
  /** Told each recorded attempt's outcome (the metrics count them). */
  onOutcome?: (status: Outcome['status']) => void;
  concurrency?: number;
}

/** The body: the event with its fields in the documented order (jsonb reorders keys). */
export function eventBody(event: Claimed['payload']): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: event.data });
}

/** Decides what an attempt's result means for the message. */
export function outcomeOf(result: AttemptResult, attempts: number, retryBaseMs: number, now: Date): Outcome {
  const { statusCode } = result;
  if (statusCode !== undefined && statusCode >= 200 && statusCode < 300) return { status: 'delivered', statusCode };
  if (statusCode === 410) return { status: 'gone', statusCode };
  const error = result.error ?? `the endpoint answered ${statusCode}`;
  const delay = retryDelayMs(attempts, retryBaseMs);
  if (delay === undefined) return { status: 'failed', statusCode: statusCode ?? null, error };
  return { status: 'pending', statusCode: statusCode ?? null, error, nextAttemptAt: new Date(now.getTime() + delay) };
}

/** A webhook event's attempt: its body, signed afresh (Standard Webhooks). */
function webhookRequest(message: Claimed, at: Date): AttemptRequest {
  const body = eventBody(message.payload);
  return { url: message.url, body, headers: signedHeaders(signingSecrets(message, at), message.id, at, body) };
}

export function createDeliveryWorker<M extends Message = Claimed>(deps: WorkerDependencies<M>): DeliveryWorker {
  const prepare = deps.prepare ?? (webhookRequest as unknown as (message: M, at: Date) => AttemptRequest);
  const { outbox, clock, log } = deps;
  const timeoutMs = deps.attemptTimeoutMs ?? 10_000;
  const pollMs = deps.pollMs ?? 1000;
  const concurrency = deps.concurrency ?? 8;
  const leaseMs = deps.leaseMs ?? timeoutMs * 6;
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
    const done = attempt(message, abort.signal)
      .catch((error) => { log(error); })
      .finally(() => {
        inFlight.delete(message.id);
        run();
      });
    inFlight.set(message.id, { abort, done });
  }

  async function attempt(message: M, signal: AbortSignal) {
    const request = await prepare(message, clock());
    const result = await deps.send(request, deps.policy, timeoutMs, signal);
    if (stopped) return; // shutting down: the message is released untried, not counted
    const now = clock();
    const outcome = outcomeOf(result, message.attempts + 1, deps.retryBaseMs, now);
    await outbox.record(owner, message.id, outcome, now);
    deps.onOutcome?.(outcome.status);
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

/**
 * The delivery worker, one per app process: the outbox worker (outbox/worker.ts: claims with a
 * lease, wakes, stops) whose attempt is an HTTP request. Each message is sent (signed afresh, see
 * signing.ts) and its outcome recorded: 2xx delivered; 410 disables the endpoint; anything else
 * is retried on the schedule of outbox/retry-schedule.ts, then failed. Back-channel logout tokens
 * go through the same worker over an outbox of their own (backchannel-logouts.ts), with `prepare`
 * making each attempt's request.
 *
 * @example const worker = createDeliveryWorker({ outbox, clock, ... }); worker.start(); await worker.stop();
 */
import { retryDelayMs } from '../outbox/retry-schedule.js';
import { createOutboxWorker } from '../outbox/worker.js';
import type { OutboxWorker } from '../outbox/worker.js';
import type { Claimed, Outbox, Outcome } from './outbox.js';
import type { AttemptResult } from './send.js';
import { signedHeaders, signingSecrets } from './signing.js';
import type { NetworkPolicy } from '../outbound/ssrf-guard.js';

export type DeliveryWorker = OutboxWorker;

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
  const { outbox, clock } = deps;
  const timeoutMs = deps.attemptTimeoutMs ?? 10_000;
  return createOutboxWorker<M>({
    outbox,
    clock,
    log: deps.log,
    leaseMs: deps.leaseMs ?? timeoutMs * 6,
    ...(deps.pollMs !== undefined ? { pollMs: deps.pollMs } : {}),
    ...(deps.concurrency !== undefined ? { concurrency: deps.concurrency } : {}),
    async attempt(message, owner, signal) {
      const request = await prepare(message, clock());
      const result = await deps.send(request, deps.policy, timeoutMs, signal);
      if (signal.aborted) return; // shutting down: the message is released untried, not counted
      const now = clock();
      const outcome = outcomeOf(result, message.attempts + 1, deps.retryBaseMs, now);
      await outbox.record(owner, message.id, outcome, now);
      deps.onOutcome?.(outcome.status);
    },
  });
}

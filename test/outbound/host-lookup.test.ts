/**
 * Bounded lookups (src/outbound/host-lookup.ts), against a resolver injected to never answer for
 * the flood's names: a flood of unresolvable metadata-document URLs delays no other document and
 * no webhook delivery beyond its own bound, gives up with its requests, leaves nothing running,
 * and keeps memory flat.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHostLookup, LookupError } from '../../src/outbound/host-lookup.js';
import type { Resolve } from '../../src/outbound/host-lookup.js';
import { guardedFetch, OutboundFetchError } from '../../src/outbound/guarded-fetch.js';
import { outboundPolicies } from '../../src/outbound/policies.js';
import { sendAttempt } from '../../src/webhooks/send.js';
import { loadConfig } from '../../src/config.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const DEADLINE_MS = 300;

/** Names under .hang.test never get an answer (until their lookup gives up); every other name is loopback. */
function injectedResolver() {
  const state = { waiting: 0, calls: 0, hung: 0 };
  const resolve: Resolve = (hostname, signal) => {
    state.calls += 1;
    if (!hostname.endsWith('.hang.test')) return Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    state.waiting += 1;
    state.hung += 1;
    return new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => { state.waiting -= 1; reject(new Error('cancelled')); }, { once: true });
    });
  };
  return { resolve, state };
}

const config = loadConfig({ NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', OUTBOUND_LOOKUP_TIMEOUT_MS: String(DEADLINE_MS) });

describe('a lookup', () => {
  test('ends at its deadline, and its resolver is told to stop', async () => {
    const { resolve, state } = injectedResolver();
    const lookup = createHostLookup({ resolve, timeoutMs: DEADLINE_MS });
    const started = Date.now();
    await expect(lookup('a.hang.test')).rejects.toMatchObject({ code: 'ETIMEOUT' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(DEADLINE_MS - 20);
    expect(Date.now() - started).toBeLessThan(DEADLINE_MS + 500);
    expect(state.waiting).toBe(0);
    expect(lookup.inFlight).toBe(0);
  });

  test('whose request gives up ends at once, leaving nothing running', async () => {
    const { resolve, state } = injectedResolver();
    const lookup = createHostLookup({ resolve, timeoutMs: 60_000 });
    const request = new AbortController();
    const pending = lookup('b.hang.test', { signal: request.signal });
    expect(lookup.inFlight).toBe(1);
    request.abort();
    await expect(pending).rejects.toBeInstanceOf(LookupError);
    expect(state.waiting).toBe(0);
    expect(lookup.inFlight).toBe(0);
  });

  test('beyond its use\'s bound is refused at once instead of waiting', async () => {
    const { resolve } = injectedResolver();
    const lookup = createHostLookup({ resolve, timeoutMs: DEADLINE_MS, maxInFlight: 2 });
    const held = [lookup('c.hang.test'), lookup('d.hang.test')];
    const started = Date.now();
    await expect(lookup('e.hang.test')).rejects.toMatchObject({ code: 'EBUSY' });
    expect(Date.now() - started).toBeLessThan(50);
    await Promise.allSettled(held);
  });
});

describe('a flood of unresolvable client_id URLs', () => {
  let receiver: Receiver;
  let documentServer: net.Server;
  let documentPort: number;
  const connectedAt: number[] = [];
  beforeAll(async () => {
    receiver = await startReceiver();
    // Where a document that resolves is fetched from: its connection is all this test needs to see.
    documentServer = net.createServer((socket) => { connectedAt.push(Date.now()); socket.destroy(); });
    await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
    documentPort = (documentServer.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await receiver.close();
    await new Promise((resolve) => documentServer.close(resolve));
  });

  function flood(fetchDocument: ReturnType<typeof guardedFetch>, count: number, round: number) {
    return Promise.allSettled(Array.from({ length: count }, (_, i) => fetchDocument(`https://c${round}-${i}.hang.test/client.json`)));
  }

  // The flood's lookups hang for a long deadline here, so that what is shown does not depend on the
  // machine's speed: the other document and the webhook are served while the flood still hangs.
  const patient = loadConfig({ NODE_ENV: 'test', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', OUTBOUND_LOOKUP_TIMEOUT_MS: '4000' });
  const webhookTo = (policy: Parameters<typeof sendAttempt>[1]) => sendAttempt({ url: `http://hooks.ok.test:${new URL(receiver.origin).port}/hook`, body: '{}', headers: {} }, policy, 5000);
  const untilInFlight = async (lookup: { readonly inFlight: number }, count: number) => {
    for (let waited = 0; waited < 5000 && lookup.inFlight < count; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
  };

  test('delays no other document and no webhook delivery: both are served while the flooded lookups still hang; each flooded fetch then fails by its own bound', async () => {
    const { resolve, state } = injectedResolver();
    const policies = outboundPolicies(patient, { resolve });
    const fetchDocument = guardedFetch({ policy: policies.documents, timeoutMs: 5000, maxBytes: 5120 });

    const started = Date.now();
    const flooding = flood(fetchDocument, 100, 0);
    await untilInFlight(policies.documents.lookup, 100);
    expect(policies.documents.lookup.inFlight).toBe(100); // every flooded lookup hangs
    const other = await fetchDocument(`https://docs.ok.test:${documentPort}/client.json`).catch((error: unknown) => error);
    expect(other).toBeInstanceOf(OutboundFetchError); // the test's server hangs up: what counts is that it was reached
    expect(connectedAt.length).toBe(1);
    const delivery = await webhookTo(policies.webhooks);
    expect(delivery.statusCode).toBe(200);
    expect(policies.documents.lookup.inFlight).toBe(100); // the flood still hangs: neither waited on it

    const outcomes = await flooding;
    expect(Date.now() - started).toBeGreaterThanOrEqual(4000 - 20); // each waited its own bound, no longer
    expect(outcomes.every((o) => o.status === 'rejected' && (o.reason as OutboundFetchError).kind === 'too slow')).toBe(true);
    expect(policies.documents.lookup.inFlight).toBe(0);
    expect(state.waiting).toBe(0);
  }, 30_000);

  test('beyond the bound, the flood refuses its own excess at once, and webhooks still go while the rest hangs', async () => {
    const { resolve, state } = injectedResolver();
    const policies = outboundPolicies(patient, { resolve });
    const fetchDocument = guardedFetch({ policy: policies.documents, timeoutMs: 5000, maxBytes: 5120 });
    const flooding = flood(fetchDocument, 300, 1);
    await untilInFlight(policies.documents.lookup, 128);
    expect(policies.documents.lookup.inFlight).toBe(128); // the bound, not 300
    expect((await webhookTo(policies.webhooks)).statusCode).toBe(200);
    expect(policies.documents.lookup.inFlight).toBe(128);
    const outcomes = await flooding;
    expect(outcomes.every((o) => o.status === 'rejected' && (o.reason as OutboundFetchError).kind === 'too slow')).toBe(true);
    expect(state.hung).toBe(128); // the excess never reached the resolver
    expect(state.waiting).toBe(0);
  }, 30_000);

  test('memory stays flat over many floods', async () => {
    const { resolve, state } = injectedResolver();
    const policies = outboundPolicies(config, { resolve });
    const fetchDocument = guardedFetch({ policy: policies.documents, timeoutMs: 5000, maxBytes: 5120 });
    const heaps: number[] = [];
    for (let round = 100; round < 115; round += 1) {
      await flood(fetchDocument, 120, round);
      await new Promise((resolve) => setTimeout(resolve, 50)); // sockets closed
      gc();
      heaps.push(process.memoryUsage().heapUsed);
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    expect(state.calls).toBe(15 * 120);
    expect(state.waiting).toBe(0);
    expect(policies.documents.lookup.inFlight).toBe(0);
    // 1,800 fetches later, the heap is where it was after the first few hundred (noise aside).
    expect(median(heaps.slice(-5)) - median(heaps.slice(2, 7))).toBeLessThan(12 * 1024 * 1024);
  }, 180_000); // 15 floods of 120 fetches: roomy, as a loaded machine slows each (it asserts no speed)
});

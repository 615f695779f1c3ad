/**
 * How the provider gets its signing keys. oidc-provider reads its `jwks` option once, when a
 * Provider is constructed; it publishes every key of it and signs with the first key of an
 * algorithm. Its documented rotation is "add the key at the end, reload every process; move it
 * to the front, reload again" (docs/README.md → `jwks`). We do exactly that reload, in process,
 * without touching its internals: a Provider built with the new order, served behind one stable
 * middleware in app.ts's chain. Constructing one takes about a millisecond.
 *
 * - The key table is read at start and every KEYS_POLL_INTERVAL_MS, on the database's clock
 *   (keys/key-reader.ts).
 * - From what was read, a provider is built ahead for each moment the published set changes
 *   (a `next` key's `currentAt`, a retiring key's `retiredAt`: keys/key-schedule.ts), and each
 *   request is served by the provider of the moment it arrives. So every instance switches at
 *   the stored instant, not at its next read.
 * - The composition root registers its listeners on the first provider (`front`), and its pages
 *   use that one (interactions, sessions: nothing there signs). A provider built later emits its
 *   events through the front's emitter, so every listener hears every provider.
 *
 * @see docs/signing-keys.md
 * @example const keys = await loadSigningKeys({ …deps }); koa.use(keys.serve(provider, (jwks) => createProvider({ …, jwks })));
 */
import type { JWK } from 'jose';
import type { Middleware } from 'koa';
import mount from 'koa-mount';
import type Provider from 'oidc-provider';
import { SYSTEM } from '../audit/audit-log.js';
import type { ChangeTransaction } from '../audit/records.js';
import type { Config } from '../config.js';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Logger } from '../ops/logger.js';
import { keyEncryption } from '../keys/key-encryption.js';
import { retirementDetail, signingKeyStore } from '../keys/signing-keys.js';
import { keyReader } from '../keys/key-reader.js';
import type { OpenKey } from '../keys/key-reader.js';
import { jwksFileKeys, seedRows, seedSource } from '../keys/key-seed.js';
import { changesAfter, publishedAt, retireAfterMs, stateAt } from '../keys/key-schedule.js';
import { servedByMoment } from './provider.js';
import type { Jwks } from './provider.js';

export type { Jwks };

export interface SigningKeys {
  /** The keys in force now, the signing one first: the first provider's `jwks`. */
  readonly jwks: Jwks;
  /**
   * Starts the reads; the middleware serves each request with the provider of its moment (in
   * place of `mount(front)`). `changes` erases the keys that retire with their audit rows
   * (audit/records.ts `records.change`); `log` gets a read that failed (the keys read before stay in use).
   */
  serve(front: Provider, build: (jwks: Jwks) => Provider, on: { changes: ChangeTransaction; log: (error: unknown) => void }): Middleware;
  /**
   * The public keys published now, a retiring key's included, as of the last read. A key signs
   * only after two reads have published it, so what the service signed always verifies here.
   */
  publicKeys(): JWK[];
  /** The key that signs now (the first published one, as the provider of this moment signs with), as of the last read. */
  signingKey(): { kid: string; alg: string; privateJwk: JWK };
  /** Stops the reads and waits for one in progress. */
  stop(): Promise<void>;
}

export interface SigningKeyDependencies {
  prisma: PrismaClient;
  config: Config;
  logger: Logger;
}

interface Stage {
  from: number;
  /** The published kids, the signing one first, space-separated. */
  readonly order: string;
  readonly serve: Middleware;
}

/** Seeds the table on a first start, reads it (a wrong KEYS_ENCRYPTION_KEY stops start-up here), and returns the keys in force. */
export async function loadSigningKeys({ prisma, config, logger }: SigningKeyDependencies): Promise<SigningKeys> {
  const seal = keyEncryption(config, { generate: true });
  const store = signingKeyStore(prisma);
  const fileKeys = jwksFileKeys(config);
  let source = '';
  const seeded = await store.seed((now) => {
    const seed = seedSource(config, fileKeys);
    source = seed.source;
    return seedRows(seed.keys, now, retireAfterMs(config), seal.seal);
  });
  if (seeded) logger.info({ source }, 'signing keys stored in the database');

  const reader = keyReader(store, seal);
  const { clock } = reader;
  let keys = await reader.read();
  const initial = publishedAt(keys, clock());
  if (initial.length === 0) throw new Error('no signing key is current (keys:list shows the key table)');
  if (fileKeys && !seeded) {
    const unknown = fileKeys.filter((key) => !keys.some((stored) => stored.kid === key.kid)).map((key) => key.kid);
    if (unknown.length) logger.warn({ kids: unknown }, 'JWKS_FILE holds keys that are not in use: the database\'s keys sign (keys:list, keys:rotate)');
  }

  // Read by each request (provider.ts servedByMoment): plain data, replaced as the reads go.
  const planned = { stages: [] as Stage[], offset: reader.offset };
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  return {
    jwks: { keys: initial.map((key) => key.privateJwk) },

    serve(front, build, { changes, log }) {
      const built = new Map<string, Middleware>([[initial.map((key) => key.kid).join(' '), mount(front)]]);
      const providerFor = (published: OpenKey[]) => {
        const provider = build({ keys: published.map((key) => key.privateJwk) });
        provider.emit = front.emit.bind(front); // app.ts listens on the front
        return mount(provider);
      };
      const plan = () => {
        const now = clock();
        const next: Stage[] = [];
        for (const moment of [now, ...changesAfter(keys, now)]) {
          const published = publishedAt(keys, moment);
          const order = published.map((key) => key.kid).join(' ');
          if (published.length === 0 || next.at(-1)?.order === order) continue;
          next.push({ from: moment, order, serve: built.get(order) ?? providerFor(published) });
        }
        if (next.length === 0) return; // nothing would be current (a table edited by hand): keep serving what we have
        next[0]!.from = -Infinity;
        built.clear();
        for (const stage of next) built.set(stage.order, stage.serve);
        planned.stages = next;
        planned.offset = reader.offset;
      };
      const poll = async () => {
        keys = await reader.read();
        plan();
        if (keys.some((key) => stateAt(key, clock()) === 'retired')) {
          const erased = await changes(async (tx, record) => {
            const retired = await store.eraseRetired(tx);
            for (const key of retired) await record.audit('key.retired', { detail: retirementDetail(key) }, { actor: SYSTEM });
            return retired.map((key) => key.kid);
          });
          if (erased.length) logger.info({ kids: erased }, 'signing keys retired');
        }
      };
      // Reads start every KEYS_POLL_INTERVAL_MS, however long one takes (never two at once).
      const schedule = (last: number) => {
        if (stopped) return;
        const start = last + config.signingKeys.pollIntervalMs;
        timer = setTimeout(() => {
          running = poll().catch(log).finally(() => {
            running = undefined;
            schedule(Math.max(start, Date.now() - config.signingKeys.pollIntervalMs));
          });
        }, Math.max(0, start - Date.now()));
        timer.unref();
      };
      plan();
      schedule(Date.now());

      return servedByMoment(planned, logger);
    },

    publicKeys: () => publishedAt(keys, clock()).map((key) => ({ ...key.publicJwk, kid: key.kid, alg: key.alg }) as JWK),

    signingKey() {
      const [key] = publishedAt(keys, clock());
      if (!key) throw new Error('no signing key is current (keys:list shows the key table)');
      return { kid: key.kid, alg: key.alg, privateJwk: key.privateJwk as JWK };
    },

    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

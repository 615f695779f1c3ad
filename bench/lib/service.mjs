/**
 * This service as the bench runs it: `node dist/launch.cjs` (what `npm start` runs after its
 * build) in its own process, in one of its modes:
 *
 * | mode      | database                                            | Redis                                       |
 * |-----------|-----------------------------------------------------|---------------------------------------------|
 * | pg        | a fresh database `oauth_bench_…` on the machine's   | a private redis-server on a free port, so   |
 * |           | PostgreSQL, dropped afterwards                      | INFO commandstats counts only this service  |
 * | pgbouncer | the same, through a private PgBouncer in transaction mode (DATABASE_POOLER=pgbouncer, | as pg |
 * |           | DATABASE_DIRECT_URL for migrations, the role's bounds set as docs/production-data-tier.md says) | |
 * | embedded  | none (DATABASE_URL unset: PGlite under a temp DATA_DIR) | none (REDIS_URL unset: process memory)   |
 *
 * It runs from `root`: this checkout, or another build's folder (the bench's `--against`).
 * Fixtures go through the service's own doors: the user through `dist/cli.js user:create`,
 * the client through `POST /api/register.php`, sessions, consents and codes through the
 * authorize, login and consent pages.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';
import { Browser, authorizePath } from './browser.mjs';
import { storeCounters } from './counters.mjs';
import { startPgbouncer } from './pgbouncer.mjs';
import { freePort, ROOT, sleep, startServer } from './processes.mjs';

export const MODES = ['pg', 'pgbouncer', 'embedded'];

export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
export const USER = { username: 'bench', password: 'correct horse battery staple' };
const OPEN_LIMITS = { RATE_LIMIT_PER_MINUTE: '1000000', TOKEN_RATE_LIMIT_PER_MINUTE: '1000000' };

async function admin(sql, url = POSTGRES_ADMIN_URL) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A private redis-server on a free port (no persistence). */
async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i += 1) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { url, stop: () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); }) };
    } catch {
      probe.disconnect();
      await sleep(100);
    }
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

function runCli(root, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['dist/cli.js', ...args], { cwd: root, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    child.on('close', (code) => (code === 0 ? resolve(output) : reject(new Error(`cli ${args[0]} failed: ${output}`))));
  });
}

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * A private_key_jwt client (RFC 7591, its RS256 key registered inline), for the exchange-pkjwt
 * row: { client_id, redirect_uri, sign() } (a fresh assertion for the token endpoint), or
 * undefined when the build under test refuses one (an older build, in an A/B run).
 */
async function registerKeyClient(base) {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const redirect = 'http://127.0.0.1:9/signed';
  const res = await fetch(`${base}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Bench signer', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [await exportJWK(publicKey)] },
    }),
  });
  if (res.status !== 201) return undefined;
  const { client_id: clientId } = await res.json();
  const sign = () => new SignJWT({}).setProtectedHeader({ alg: 'RS256' }).setIssuer(clientId).setSubject(clientId).setAudience(base)
    .setIssuedAt().setExpirationTime('10m').setJti(randomBytes(16).toString('base64url')).sign(privateKey);
  return { client_id: clientId, redirect_uri: redirect, sign };
}

/** What the bench sets for each service it starts (the modes run side by side): `--env` may not give them. */
export const PER_SERVICE = ['PORT', 'BASE_URL', 'DATA_DIR'];

/**
 * Prepares a mode's stores and fixtures and starts the service on them.
 * `nodeArgs` go before `dist/launch.cjs` (the bench's --cpu-prof passes Node's profiler flags);
 * `env` is added to the service's environment (the bench's --env, to compare configurations);
 * `root` is the folder it runs from (its `dist/`); `name` names its log files.
 * Returns the target: { mode, root, base, server, client, keyClient, user, sessionCookie, counters, accessToken, mintCodes(n, client?), signedCodeBodies(codes), exchange(code), startRefusing(), close() }.
 */
export async function startService(mode, { logDir, nodeArgs = [], env: given = {}, root = ROOT, name = `service-${mode}` }) {
  // `--env METRICS_PORT=…` turns the metrics listener on; each service takes a free port for it (`0`), as one port serves one process.
  const extraEnv = given.METRICS_PORT === undefined ? given : { ...given, METRICS_PORT: '0' };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `oauth-bench-${mode}-`));
  const cleanups = [() => fs.rmSync(dataDir, { recursive: true, force: true })];
  // One KEYS_ENCRYPTION_KEY for every instance on the database (the 429 row's has a DATA_DIR of its own).
  const env = { DATA_DIR: dataDir, AUTHORIZATION_CODE_TTL: '600', REDIS_KEY_PREFIX: 'bench:', KEYS_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
  let database;
  let redisUrl;
  try {
    if (mode === 'pg' || mode === 'pgbouncer') {
      database = `oauth_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
      await admin(`CREATE DATABASE "${database}"`);
      cleanups.push(() => admin(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
      const url = new URL(POSTGRES_ADMIN_URL);
      url.pathname = `/${database}`;
      env.DATABASE_URL = url.toString();
      if (mode === 'pgbouncer') {
        // The docs' one-time command: the server bounds the role's sessions (the pooler passes no startup parameters).
        const { boundsCommand } = await import(path.join(ROOT, 'dist', 'store', 'pooler.js'));
        // The bounds as the service reads them (its defaults, and --env's in any duration notation).
        const { loadConfig } = await import(path.join(root, 'dist', 'config.js'));
        const { timeouts } = loadConfig({ ...env, ...extraEnv });
        await admin(boundsCommand(decodeURIComponent(url.username) || 'postgres', database, timeouts), env.DATABASE_URL);
        const bouncer = await startPgbouncer({ upstream: POSTGRES_ADMIN_URL });
        cleanups.push(bouncer.stop);
        Object.assign(env, { DATABASE_DIRECT_URL: env.DATABASE_URL, DATABASE_URL: bouncer.urlFor(env.DATABASE_URL), DATABASE_POOLER: 'pgbouncer' });
      }
      const redis = await startRedis();
      cleanups.push(redis.stop);
      redisUrl = env.REDIS_URL = redis.url;
    }
    await runCli(root, ['user:create', '--username', USER.username, '--password', USER.password, '--email', 'bench@example.com', '--full-name', 'Bench User'], { ...env, ...extraEnv }); // as the service will read its stores

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const serviceEnv = { ...env, ...OPEN_LIMITS, ...extraEnv, PORT: String(port), BASE_URL: base };
    const launch = () => startServer(name, [...nodeArgs, 'dist/launch.cjs'], serviceEnv, `${base}/healthz/live`, { logDir, cwd: root });
    const server = await launch();
    cleanups.push(() => target.server.stop());

    const client = await fetch(`${base}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Bench', redirect_uri: 'http://127.0.0.1:9/callback' }),
    }).then((res) => res.json());
    const keyClient = await registerKeyClient(base);
    // One browser session that has logged in and consented to both: silent authorizations reuse it.
    const signIn = async () => {
      const browser = new Browser(base);
      const code = await browser.authorize(client, USER);
      if (keyClient) await browser.authorize(keyClient, USER);
      return { code, cookie: browser.cookiesFor(authorizePath(client)) };
    };
    const first = await signIn();
    const sessionCookie = first.cookie;

    const target = {
      mode,
      root,
      base,
      server,
      databaseUrl: env.DATABASE_DIRECT_URL ?? env.DATABASE_URL, // PostgreSQL itself (seeding), not the pooler
      client,
      keyClient,
      user: USER,
      sessionCookie,
      counters: storeCounters({ adminUrl: POSTGRES_ADMIN_URL, database, redisUrl }),
      /** The spec's token form body for a code. */
      codeBody: (code) => new URLSearchParams({ code, client_id: client.client_id, client_secret: client.client_secret }).toString(),
      refreshBody: (token) => new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: client.client_id, client_secret: client.client_secret }).toString(),
      /**
       * Token form bodies for `codes` of the key client, each with an assertion of its own (RS256, no
       * client_id, as ChatGPT's and the MCP SDK's), signed now: before the measured window opens.
       */
      async signedCodeBodies(codes) {
        if (!keyClient) throw new Error('this build registered no private_key_jwt client (RFC 7591 with jwks refused): it has no exchange-pkjwt row');
        return Promise.all(codes.map(async (code) => `code=${encodeURIComponent(code)}&${new URLSearchParams({ client_assertion_type: ASSERTION_TYPE, client_assertion: await keyClient.sign() })}`));
      },
      /** Fresh codes of `forClient` (the spec client by default) through silent authorizations of the bench session (16 in flight). */
      async mintCodes(n, forClient = client) {
        const codes = [];
        const headers = { cookie: target.sessionCookie, accept: 'text/html' };
        await Promise.all(Array.from({ length: 16 }, async () => {
          while (codes.length < n) {
            const res = await fetch(`${base}${authorizePath(forClient)}`, { headers, redirect: 'manual' });
            const code = res.headers.get('location') && new URL(res.headers.get('location')).searchParams.get('code');
            if (!code) throw new Error(`silent authorize gave ${res.status} ${res.headers.get('location')}`);
            codes.push(code);
          }
        }));
        return codes.slice(0, n);
      },
      /** Exchanges a code; the token response. */
      async exchange(code) {
        const res = await fetch(`${base}/api/token.php`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: target.codeBody(code) });
        if (res.status !== 200) throw new Error(`exchange gave ${res.status}: ${await res.text()}`);
        return res.json();
      },
      /**
       * A second instance with the default limits (same stores and `env`, its own key prefix,
       * its own DATA_DIR in embedded mode) for the 429 row. Resolves with { base, server }.
       */
      async startRefusing() {
        const refusingPort = await freePort();
        const refusingBase = `http://127.0.0.1:${refusingPort}`;
        const refusingDir = fs.mkdtempSync(path.join(os.tmpdir(), `oauth-bench-${mode}-429-`));
        const refusing = await startServer(`${name}-429`, [...nodeArgs, 'dist/launch.cjs'],
          { ...env, ...extraEnv, DATA_DIR: refusingDir, REDIS_KEY_PREFIX: 'bench429:', PORT: String(refusingPort), BASE_URL: refusingBase }, `${refusingBase}/healthz/live`, { logDir, cwd: root });
        return {
          base: refusingBase,
          server: refusing,
          async stop() {
            await refusing.stop();
            fs.rmSync(refusingDir, { recursive: true, force: true });
          },
        };
      },
      /**
       * Stops the service, runs `use({ dataDir })` (the embedded database is the service's
       * while it runs), starts it again on the same port and signs the bench session in again
       * (embedded sessions live in process memory).
       */
      async restartWith(use) {
        await target.server.stop();
        await use({ dataDir });
        target.server = await launch();
        target.sessionCookie = (await signIn()).cookie;
      },
      async close() {
        for (const cleanup of cleanups.reverse()) await cleanup();
      },
    };
    target.accessToken = (await target.exchange(first.code)).access_token;
    return target;
  } catch (error) {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch { /* the first error is the one to report */ }
    }
    throw error;
  }
}

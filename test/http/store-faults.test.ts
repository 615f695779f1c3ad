/**
 * A store that is down, hung or refusing never hangs the service and never answers 500: each path answers
 * what it can without that store, and otherwise 503 `temporarily_unavailable` with Retry-After
 * (a readable page in the browser), or at the authorization endpoint the error sent back to the
 * client (RFC 6749 §4.1.2.1), having waited one timeout at most; health answers within 2 s; and
 * once the store is back every path works again without a restart. docs/failure-behaviour.md.
 *
 * The app runs on a private redis-server and a private Postgres cluster, which the test stops
 * (SIGKILL), pauses (SIGSTOP: a hung host), fills (Redis out of memory: it answers, refusing
 * writes) and brings back — never the machine's shared ones.
 */
import { READY_CACHE_MS } from '../../src/http/health.js';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { APPLICATIONS_PATH } from '../helpers/applications-page.js';
import { Browser } from '../helpers/browser.js';
import type { Step, TestClient } from '../helpers/browser.js';
import { basicAuth, createUser, obtainTokens, registerClient } from '../helpers/fixtures.js';
import { startPostgresServer } from '../helpers/postgres-server.js';
import type { PostgresServer } from '../helpers/postgres-server.js';
import { startRedisServer } from '../helpers/redis-server.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { testRedisPrefix } from '../helpers/services.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

/**
 * docs/failure-behaviour.md "A hung store is waited on once": a request pays one timeout at most: a Redis
 * command's (REDIS_COMMAND_TIMEOUT_MS), or PostgreSQL's statement timeout and the client's margin
 * after it (DATABASE_STATEMENT_TIMEOUT_MS + 0.5 s; a connection's, DATABASE_CONNECT_TIMEOUT_MS, is
 * shorter). The app here runs with timeouts twice and one and a half times the defaults, so that a
 * loaded machine's slack (each store's margin) still tells one timeout from two.
 */
const TIMEOUTS = { REDIS_COMMAND_TIMEOUT_MS: '2s', DATABASE_STATEMENT_TIMEOUT_MS: '3s', DATABASE_CONNECT_TIMEOUT_MS: '3s' };
const ONE_TIMEOUT_MS = { redis: 2000, database: 3500 } as const;
const MARGIN_MS = { redis: 1900, database: 2400 } as const;
const BOUND_MS = { redis: ONE_TIMEOUT_MS.redis + MARGIN_MS.redis, database: ONE_TIMEOUT_MS.database + MARGIN_MS.database } as const;

const afterReadyCache = async <T>(ask: () => Promise<T>) => {
  await new Promise((resolve) => setTimeout(resolve, READY_CACHE_MS));
  return ask();
};

/** `/healthz/live` and `/healthz/ready` both answer within 2 s whatever the stores do; `/healthz` is readiness too. */
const HEALTH_BOUND_MS = 2000;
const HEALTH_PATHS: ReadonlySet<string> = new Set(['/healthz', '/healthz/live', '/healthz/ready']);

type Store = keyof typeof BOUND_MS;

interface Answer {
  status: number;
  ms: number;
  type: string;
  body: string;
  retryAfter: string | null;
  location: string | null;
}

/** What a path needs to answer normally, ready before the fault. */
interface Fixtures {
  client: TestClient;
  loggedIn: Browser; // a session that has consented: silent authorize
  atLogin: { browser: Browser; page: { url: string; body: string } };
  atConsent: { browser: Browser; page: { url: string; body: string } };
  /** The sign-in forms of the applications and settings pages, opened (their CSRF cookie set). */
  atApplications: { browser: Browser; page: Step };
  atSettings: { browser: Browser; page: { url: string; body: string } };
  /** The registration page, opened (its CSRF cookie set). */
  atRegister: { browser: Browser; page: { url: string; body: string } };
  code: string;
  tokens: { access_token: string; refresh_token: string };
  revocable: { access_token: string };
}

describe('stores down or hung: bounded, clean answers, then recovery', () => {
  let redis: RedisServer;
  let postgres: PostgresServer;
  let t: TestApp;
  let user: { username: string; password: string };
  /** Errors logged while answering a request (the background jobs' complaints during a fault are expected). */
  const logged: string[] = [];

  beforeAll(async () => {
    [redis, postgres] = await Promise.all([startRedisServer(), startPostgresServer()]);
    t = await startTestApp({
      mode: 'embedded', // no shared database: the environment below names the private stores
      env: { DATABASE_URL: postgres.url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: testRedisPrefix(), ...TIMEOUTS },
      log: (error, ctx) => { if (ctx) logged.push(`${ctx.method} ${ctx.path}: ${String(error)}`); },
    });
    user = await createUser(t);
  }, 120_000);
  afterAll(async () => {
    redis?.resume();
    postgres?.resume();
    await t?.close({ keepData: true });
    await Promise.all([redis?.stop(), postgres?.stop()]);
  }, 60_000);

  const authorizeQuery = (client: TestClient) => new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state: 's1' });

  async function prepare(): Promise<Fixtures> {
    const client = await registerClient(t);
    const loggedIn = new Browser(t.baseUrl);
    await loggedIn.authorize(client, user);
    const atLogin = new Browser(t.baseUrl);
    const loginPage = await atLogin.follow(`/api/authorize.php?${authorizeQuery(client)}`);
    const atConsent = new Browser(t.baseUrl);
    const consentPage = await atConsent.submit(await atConsent.follow(`/api/authorize.php?${authorizeQuery(client)}`), '/login', user);
    expect(consentPage.body).toContain('/confirm"');
    const code = new URL((await new Browser(t.baseUrl).authorize(client, user))).searchParams.get('code')!;
    const atApplications = new Browser(t.baseUrl);
    const atSettings = new Browser(t.baseUrl);
    const atRegister = new Browser(t.baseUrl);
    return {
      client, loggedIn, code,
      atLogin: { browser: atLogin, page: loginPage },
      atConsent: { browser: atConsent, page: consentPage },
      atApplications: { browser: atApplications, page: await atApplications.request(APPLICATIONS_PATH) },
      atSettings: { browser: atSettings, page: await atSettings.follow('/api/settings.php') },
      atRegister: { browser: atRegister, page: await atRegister.follow('/api/register.php') },
      tokens: await obtainTokens(t, client, user),
      revocable: await obtainTokens(t, client, user),
    };
  }

  async function timed(send: () => Promise<Response>): Promise<Answer> {
    const started = Date.now();
    const res = await send();
    const body = await res.text();
    return { status: res.status, ms: Date.now() - started, type: res.headers.get('content-type') ?? '', body, retryAfter: res.headers.get('retry-after'), location: res.headers.get('location') };
  }

  const signal = () => AbortSignal.timeout(15_000);
  const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', body: new URLSearchParams(fields).toString() });
  const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) => {
    const { body, ...type } = form(fields);
    return fetch(`${t.baseUrl}${path}`, { method: 'POST', headers: { ...type, accept: 'application/json', ...headers }, body, signal: signal() });
  };
  const asResponse = (step: Step) => new Response(step.status === 303 ? null : step.body, { status: step.status, headers: step.headers });
  const csrfOf = (page: { body: string }, action: string) => {
    const forms = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)];
    const match = forms.find((f) => f[1]!.endsWith(action))!;
    return { url: new URL(match[1]!, t.baseUrl).toString(), csrf: /name="_csrf" value="([^"]*)"/.exec(match[2]!)![1]! };
  };

  /** Every path, as its users send it. */
  const PATHS: Record<string, (f: Fixtures) => Promise<Answer>> = {
    'login page': (f) => timed(async () => {
      const step = await f.atLogin.browser.request(f.atLogin.page.url);
      return new Response(step.body, { status: step.status, headers: step.headers });
    }),
    'login POST': (f) => timed(async () => {
      const { url, csrf } = csrfOf(f.atLogin.page, '/login');
      const step = await f.atLogin.browser.request(url, { form: { _csrf: csrf, username: user.username, password: user.password } });
      return new Response(step.body, { status: step.status, headers: step.headers });
    }),
    consent: (f) => timed(async () => {
      const { url, csrf } = csrfOf(f.atConsent.page, '/confirm');
      const step = await f.atConsent.browser.request(url, { form: { _csrf: csrf } });
      return new Response(step.body, { status: step.status, headers: step.headers });
    }),
    'silent authorize': (f) => timed(async () => asResponse(await f.loggedIn.request(`/api/authorize.php?${authorizeQuery(f.client)}`))),
    'new authorize': (f) => timed(async () => asResponse(await new Browser(t.baseUrl).request(`/api/authorize.php?${authorizeQuery(f.client)}`))),
    'applications sign-in POST': (f) => timed(async () => {
      const { url, csrf } = csrfOf(f.atApplications.page, APPLICATIONS_PATH);
      return asResponse(await f.atApplications.browser.request(url, { form: { _csrf: csrf, action: 'sign_in', username: user.username, password: user.password } }));
    }),
    'applications page (login session)': (f) => timed(async () => asResponse(await f.loggedIn.request(APPLICATIONS_PATH))),
    'settings sign-in POST': (f) => timed(async () => {
      const { url, csrf } = csrfOf(f.atSettings.page, '?action=sign_in');
      return asResponse(await f.atSettings.browser.request(url, { form: { _csrf: csrf, client_id: f.client.client_id, client_secret: f.client.client_secret } }));
    }),
    'token exchange': (f) => timed(() => post('/api/token.php', { code: f.code, client_id: f.client.client_id, client_secret: f.client.client_secret })),
    refresh: (f) => timed(() => post('/api/token.php', { grant_type: 'refresh_token', refresh_token: f.tokens.refresh_token, client_id: f.client.client_id, client_secret: f.client.client_secret })),
    userinfo: (f) => timed(() => fetch(`${t.baseUrl}/api/userinfo.php`, { headers: { authorization: `Bearer ${f.tokens.access_token}` }, signal: signal() })),
    revoke: (f) => timed(() => post('/api/revoke.php', { token: f.revocable.access_token }, { authorization: basicAuth(f.client) })),
    introspect: (f) => timed(() => post('/api/introspect.php', { token: f.tokens.access_token }, { authorization: basicAuth(f.client) })),
    register: () => timed(() => fetch(`${t.baseUrl}/api/register.php`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'During a fault', redirect_uri: 'http://localhost:9999/cb' }), signal: signal(),
    })),
    'register page POST': (f) => timed(async () => {
      const { url, csrf } = csrfOf(f.atRegister.page, '/api/register.php');
      return asResponse(await f.atRegister.browser.request(url, { form: { _csrf: csrf, client_name: 'Registered in a browser', redirect_uri: 'http://localhost:9999/cb' } }));
    }),
    'webhooks API': (f) => timed(() => fetch(`${t.baseUrl}/api/webhooks.php`, { headers: { authorization: basicAuth(f.client) }, signal: signal() })),
    // Readiness answers from a check of the stores at most READY_CACHE_MS old (http/health.ts): asked once that has passed.
    '/healthz': () => afterReadyCache(() => timed(() => fetch(`${t.baseUrl}/healthz`, { signal: signal() }))),
    '/healthz/live': () => timed(() => fetch(`${t.baseUrl}/healthz/live`, { signal: signal() })),
    '/healthz/ready': () => afterReadyCache(() => timed(() => fetch(`${t.baseUrl}/healthz/ready`, { signal: signal() }))),
  };

  /** The normal answer of each path. */
  const HEALTHY: Record<string, number> = {
    'login page': 200, 'login POST': 303, consent: 303, 'silent authorize': 303, 'new authorize': 303, 'token exchange': 200, refresh: 200,
    userinfo: 200, revoke: 200, introspect: 200, register: 201, 'register page POST': 201, 'webhooks API': 200,
    'applications sign-in POST': 303, 'applications page (login session)': 200, 'settings sign-in POST': 303,
    '/healthz': 200, '/healthz/live': 200, '/healthz/ready': 200,
  };
  /** Where a normal redirect leads (the sign-ins: back to their page, signed in). */
  const HEALTHY_LOCATION: Record<string, RegExp> = {
    'silent authorize': /^http:\/\/localhost:9999\/callback\?code=/,
    'new authorize': /\/interaction\/[\w-]+$/,
    'applications sign-in POST': /\/api\/applications\.php$/,
    'settings sign-in POST': /\/api\/settings\.php\?done=signed_in$/,
  };

  /** Paths that need the store; the others must keep answering normally without it. */
  const NEEDS: Record<Store, ReadonlySet<string>> = {
    // Sessions and interactions live in Redis; tokens, clients and users do not (rate limits and
    // the login guard fall back to the per-process insurance limiter). The applications and
    // settings pages' own sign-ins keep a cookie, not a session.
    redis: new Set(['login page', 'login POST', 'consent', 'silent authorize', 'new authorize', 'applications page (login session)']),
    database: new Set(['login page', 'login POST', 'consent', 'silent authorize', 'new authorize', 'token exchange', 'refresh', 'userinfo', 'revoke', 'introspect', 'register', 'register page POST', 'webhooks API',
      'applications sign-in POST', 'applications page (login session)', 'settings sign-in POST']),
  };
  /**
   * A Redis out of memory answers reads and refuses writes: the paths that write a session or an
   * interaction (or its result) give the clean 503; those that only read one keep working, as do
   * health (Redis answers its PING) and the rate limits (the insurance limiter counts meanwhile).
   */
  const NEEDS_REDIS_WRITES: ReadonlySet<string> = new Set(['login POST', 'consent', 'silent authorize', 'new authorize']);
  /** API paths answer JSON (the spec's error body); the others are pages a browser shows. */
  const API_PATHS: ReadonlySet<string> = new Set(['token exchange', 'refresh', 'userinfo', 'revoke', 'introspect', 'register', 'webhooks API']);
  /**
   * RFC 6749 §4.1.2.1: where the client and its redirect_uri are already trusted (Postgres up),
   * the authorization endpoint sends the error back to the client. With Postgres down the client
   * cannot be looked up: the 503 page (docs/failure-behaviour.md).
   */
  const ERROR_TO_CLIENT: Record<Store, ReadonlySet<string>> = {
    redis: new Set(['silent authorize', 'new authorize']),
    database: new Set(),
  };

  function expectErrorToClient(path: string, answer: Answer, client: TestClient) {
    expect({ path, status: answer.status }).toEqual({ path, status: 303 });
    const location = new URL(answer.location!);
    expect({ path, to: `${location.origin}${location.pathname}`, ...Object.fromEntries(location.searchParams) }).toEqual({
      path, to: client.redirect_uri, error: 'temporarily_unavailable', error_description: expect.any(String), state: 's1', iss: t.baseUrl,
    });
  }

  function expectUnavailable(path: string, answer: Answer) {
    expect({ path, status: answer.status }).toEqual({ path, status: 503 });
    expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    if (API_PATHS.has(path)) {
      expect({ path, type: answer.type }).toEqual({ path, type: expect.stringMatching(/^application\/json/) });
      expect(JSON.parse(answer.body)).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    } else {
      expect(answer.type).toMatch(/^text\/html/);
      expect(answer.body).toContain('Temporarily unavailable');
      expect(answer.body).toContain('temporarily_unavailable');
    }
  }

  async function underFault(store: Store, how: 'stopped' | 'paused' | 'refusing') {
    await untilReady(); // a fault test that failed earlier left before seeing its store back
    const fixtures = await prepare();
    const server = store === 'redis' ? redis : postgres;
    if (how === 'stopped') await server.kill();
    else if (how === 'refusing') await redis.refuseWrites(true);
    else server.pause();
    let answers: [string, Answer][];
    try {
      // All at once, as traffic arrives: none may wait on another.
      answers = await Promise.all(Object.entries(PATHS).map(async ([path, send]) => [path, await send(fixtures)] as [string, Answer]));
    } finally {
      if (how === 'stopped') await server.restart();
      else if (how === 'refusing') await redis.refuseWrites(false);
      else server.resume();
    }
    const needs = how === 'refusing' ? NEEDS_REDIS_WRITES : NEEDS[store];
    const healthFails = how !== 'refusing';
    if (process.env.FAULT_TIMINGS) console.log(store, how, answers.map(([path, a]) => `${path}: ${a.status} ${a.ms} ms${a.location ? ` → ${a.location}` : ''}`).join('\n'));
    for (const [path, answer] of answers) {
      expect({ path, ms: answer.ms, bounded: answer.ms < BOUND_MS[store] }).toEqual({ path, ms: answer.ms, bounded: true });
      expect(answer.body).not.toMatch(/oops|server_error|\bat .*\.(js|ts):\d+/);
      if (answer.status < 300 || answer.status >= 400) expect({ path, location: answer.location }).toEqual({ path, location: null }); // an answer that is not a redirect leads nowhere
      if (HEALTH_PATHS.has(path) && !healthFails) {
        expectHealthy(path, answer);
      } else if (HEALTH_PATHS.has(path)) {
        expect({ path, ms: answer.ms, withinTwoSeconds: answer.ms < HEALTH_BOUND_MS }).toEqual({ path, ms: answer.ms, withinTwoSeconds: true });
        // Liveness touches no store; readiness names the failing one.
        expect({ path, status: answer.status, body: JSON.parse(answer.body) }).toEqual(path === '/healthz/live'
          ? { path, status: 200, body: { status: 'ok' } }
          : { path, status: 503, body: { status: 'unavailable', failing: [store] } });
      } else if (ERROR_TO_CLIENT[store].has(path)) {
        expectErrorToClient(path, answer, fixtures.client);
      } else if (needs.has(path)) {
        expectUnavailable(path, answer);
      } else {
        expectHealthy(path, answer);
      }
    }
    await expectRecovered();
  }

  /** Fresh fixtures, every path answered normally: the service recovered by itself. */
  async function expectRecovered() {
    await untilReady();
    const fixtures = await prepare();
    for (const [path, send] of Object.entries(PATHS)) expectHealthy(path, await send(fixtures));
  }

  async function untilReady() {
    for (let waited = 0; (await fetch(`${t.baseUrl}/healthz/ready`)).status !== 200; waited += 200) {
      if (waited > 20_000) throw new Error('the service did not become ready again');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  function expectHealthy(path: string, answer: Answer) {
    expect({ path, status: answer.status }).toEqual({ path, status: HEALTHY[path] });
    const leadsTo = HEALTHY_LOCATION[path];
    if (leadsTo) expect({ path, location: answer.location }).toEqual({ path, location: expect.stringMatching(leadsTo) });
  }

  test('the fixtures work while both stores are up', async () => {
    await expectRecovered();
  }, 60_000);

  test('Redis stopped', async () => { await underFault('redis', 'stopped'); }, 90_000);
  test('Redis paused (hung)', async () => { await underFault('redis', 'paused'); }, 90_000);
  test('Redis refusing writes (out of memory)', async () => { await underFault('redis', 'refusing'); }, 90_000);
  test('Postgres stopped', async () => { await underFault('database', 'stopped'); }, 90_000);
  test('Postgres paused (hung)', async () => { await underFault('database', 'paused'); }, 90_000);

  test('no request failed unexpectedly: nothing was logged as a request error', () => {
    expect(logged).toEqual([]);
  });
});

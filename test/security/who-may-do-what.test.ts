/**
 * Who may do what: the tables in docs/security.md, walked cell by cell against the running service
 * (the built service in its own process, so that it trusts the metadata documents' and key sets'
 * private CA as operators make it: NODE_EXTRA_CA_CERTS), on PostgreSQL + Redis and on the
 * embedded database.
 *
 * Every surface that takes a credential (rows) is tried by every kind of principal (columns) with
 * every credential, and each answer must be the one the page states. Clients with secrets (or
 * none) and users are tried with secrets: current, previous in grace, previous ended, empty,
 * wrong, another client's, the decoy text old builds compared public clients with, a token from
 * another client. Clients that sign assertions with their keys (private_key_jwt) are tried with
 * assertions: a fresh one, an empty one, one signed by a stranger's key or another client's, a
 * secret instead (the decoy text), a fresh one with another client's token, one already used,
 * one expired, one for another audience. A row, column or credential the page lacks, or one the
 * walk does not know, fails the test: the two cannot drift apart.
 *
 * `PRINT_ACCESS_TABLE=1` prints what the service answered, cell by cell, in the page's grammar.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KEYS, readAccessTable, SECRETS } from '../helpers/access-table.js';
import type { Credential } from '../helpers/access-table.js';
import { Browser } from '../helpers/browser.js';
import { assertionForm, jwksOf, makeKey, signAssertion } from '../helpers/client-keys.js';
import type { TestKey } from '../helpers/client-keys.js';
import { buildDist } from '../helpers/build.js';
import { expectSuccess, runCli } from '../helpers/cli.js';
import { startDocumentServer } from '../helpers/document-server.js';
import type { DocumentServer } from '../helpers/document-server.js';
import { startInstance, stopInstance, TEST_KEYS_ENCRYPTION_KEY } from '../helpers/instance.js';
import { copyMigratedPglite } from '../helpers/migrated-templates.js';
import type { Instance } from '../helpers/instance.js';
import { pkcePair, pkceParams } from '../helpers/pkce.js';
import { createTestDatabase, deleteRedisKeys, dropDatabase, freePort, REDIS_URL, tempDataDir, testRedisPrefix } from '../helpers/services.js';
import type { TestDatabase } from '../helpers/services.js';
import { startMailbox } from '../helpers/mailbox.js';
import type { Mailbox } from '../helpers/mailbox.js';
import { postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { UNLIMITED } from '../helpers/test-app.js';
import { describeWithOpenssl, makeCertificates } from '../helpers/tls.js';
import type { Certificates } from '../helpers/tls.js';

/** What builds before this one compared a public client's presented secret with. */
const OLD_DECOY = 'decoy: no client has this secret';
const INITIAL_ACCESS_TOKEN = `iat-${randomBytes(16).toString('hex')}`;
const REDIRECT = 'http://127.0.0.1:9999/callback';
const GRANTS = ['authorization_code', 'refresh_token'];
const NATIVE_REDIRECT = 'http://127.0.0.1/callback';
const RESOURCE = 'https://tools.example/mcp';
const USER = { username: `owner${randomBytes(3).toString('hex')}`, password: 'correct horse battery' };
/**
 * The user whose account the account rows act on (its forms, a reset link): one of its own, so
 * that signing it out everywhere or resetting its password ends nothing the other rows hold. The
 * `user` column's `current` is this user's password there; a password change or a reset sets the
 * same password again.
 */
const ACCOUNT = { username: `account${randomBytes(3).toString('hex')}`, password: 'account horse battery', email: `account-${randomBytes(3).toString('hex')}@example.com` };
/** What every instance here runs with, the lock aside: documents and key sets on loopback, machine clients, one resource. */
const OPEN_ENV = {
  ...UNLIMITED, CLIENT_METADATA_ALLOW_PRIVATE_NETWORKS: 'true', REGISTRATION_CLIENT_CREDENTIALS: 'true',
  RESOURCES: JSON.stringify([{ uri: RESOURCE, scopes: 'tools:read' }]),
};

const KINDS = ['spec client', 'RFC 7591 confidential', 'public web', 'public native', 'metadata document', 'machine client', 'unknown id', 'deleted client', 'user'] as const;
/** Clients that authenticate with assertions signed by their keys (the second table). */
const KEY_KINDS = ['private_key_jwt client', 'private_key_jwt document'] as const;
type Kind = (typeof KINDS)[number] | (typeof KEY_KINDS)[number];

interface Principal {
  readonly kind: Kind;
  readonly clientId: string;
  /** Its secrets: current, the previous one in its grace, one replaced with no grace. None for a public client. */
  readonly secrets: Partial<Record<'current' | 'grace' | 'ended', string>>;
  readonly isPublic: boolean;
  readonly redirectUri: string;
  /** Whether it can still be sent through the authorization endpoint. */
  readonly authorizes: boolean;
  /** The key it signs its assertions with (private_key_jwt). */
  readonly key?: TestKey;
  /** An access token it got before it was deleted (the deleted client's). */
  staleAccessToken?: string;
}

interface World {
  baseUrl: string;
  /** The SMTP server the service mails to (reset links for the account rows). */
  mailbox: Mailbox;
  /** Where `/metrics` is served (METRICS_PORT, on loopback as METRICS_HOST is by default). */
  metricsUrl: string;
  principals: Map<Kind, Principal>;
  browser: Browser;
  /** A key nobody registered. */
  stranger: TestKey;
  /** Where the key client's keys are served (its registration body names it). */
  keysUri: string;
  close(): Promise<void>;
}

/** A credential as sent: a value, sent without one (a public client's own way), or impossible to form. */
type Presented = { value: string } | 'none' | 'n/a';

function registration(kind: Kind, keysUri: string): Record<string, unknown> | undefined {
  switch (kind) {
    case 'machine client': return { client_name: 'Machine', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic' };
    case 'private_key_jwt client': return { client_name: 'Key Client', redirect_uris: [REDIRECT], grant_types: [...GRANTS, 'client_credentials'], token_endpoint_auth_method: 'private_key_jwt', jwks_uri: keysUri };
    case 'spec client': return { client_name: 'Spec Client', redirect_uri: REDIRECT };
    case 'RFC 7591 confidential': return { client_name: 'Confidential', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_post', grant_types: GRANTS };
    case 'public web': return { client_name: 'Public Web', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', application_type: 'web', grant_types: GRANTS };
    case 'public native': return { client_name: 'Public Native', redirect_uris: [NATIVE_REDIRECT], token_endpoint_auth_method: 'none', application_type: 'native', grant_types: GRANTS };
    default: return undefined;
  }
}

async function register(baseUrl: string, body: Record<string, unknown>, bearer = INITIAL_ACCESS_TOKEN): Promise<{ client_id: string; client_secret?: string }> {
  const res = await fetch(`${baseUrl}/api/register.php`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ client_id: string; client_secret?: string }>;
}

/** Rotates a confidential client twice on its settings page: the first secret ends at once, the second works for an hour beside the third. */
async function rotated(baseUrl: string, clientId: string, first: string): Promise<Principal['secrets']> {
  const browser = new Browser(baseUrl);
  let page = await signInOnSettingsPage(browser, { client_id: clientId, client_secret: first });
  page = await postSettingsForm(browser, page, 'rotate_secret', { grace: '0' });
  const second = /id="new_client_secret"[^>]*>([^<]*)</.exec(page.body)![1]!;
  page = await postSettingsForm(browser, page, 'rotate_secret', { grace: '1h' });
  const third = /id="new_client_secret"[^>]*>([^<]*)</.exec(page.body)![1]!;
  return { ended: first, grace: second, current: third };
}

async function startWorld(mode: 'postgres' | 'embedded', tls: Certificates, docs: DocumentServer): Promise<World> {
  await buildDist();
  const dataDir = tempDataDir('who-may');
  let database: TestDatabase | undefined;
  const prefix = testRedisPrefix();
  // Migrated stores (test/helpers/migrated-templates.ts): the walk is about doors, not first starts.
  const store: Record<string, string> = mode === 'postgres'
    ? { DATABASE_URL: (database = await createTestDatabase({ migrated: true })).url, REDIS_URL, REDIS_KEY_PREFIX: prefix }
    : { DATA_DIR: dataDir };
  if (mode === 'embedded') await copyMigratedPglite(dataDir);
  const metricsPort = await freePort();
  const mailbox = await startMailbox();
  const env = {
    SMTP_URL: mailbox.url,
    ...store, ...OPEN_ENV, REGISTRATION_INITIAL_ACCESS_TOKEN: INITIAL_ACCESS_TOKEN, KEYS_ENCRYPTION_KEY: TEST_KEYS_ENCRYPTION_KEY, NODE_EXTRA_CA_CERTS: tls.caFile,
    METRICS_PORT: String(metricsPort),
    // Each sign-in attempt comes from an address of its own (X-Forwarded-For through one trusted
    // hop), so the login guard's counters, tested on their own, do not answer for the credentials here.
    TRUST_PROXY: '1',
  };
  const cli = (args: string[], input?: string) => runCli(args, { ...store, KEYS_ENCRYPTION_KEY: TEST_KEYS_ENCRYPTION_KEY }, input === undefined ? {} : { input });
  expectSuccess(await cli(['user:create', '--username', USER.username, '--email', 'owner@example.com', '--full-name', 'Owner', '--password-stdin'], USER.password));
  expectSuccess(await cli(['user:create', '--username', ACCOUNT.username, '--email', ACCOUNT.email, '--full-name', 'Account', '--password-stdin'], ACCOUNT.password));
  // A machine client an operator made (the embedded database has one owner: before the server starts).
  const machine = JSON.parse(expectSuccess(await cli(['clients:create', '--name', 'Machine', '--grant-types', 'client_credentials', '--json'])).stdout) as { client_id: string; client_secret: string };
  let instance: Instance = await startInstance(env, { dataDir });
  const { baseUrl } = instance;

  const [clientKey, documentKey, stranger] = await Promise.all([makeKey('RS256', 'key-client'), makeKey('RS256', 'document'), makeKey('RS256')]);
  const keysUri = docs.url(`/who-may-${mode}-keys.json`);
  docs.route(`/who-may-${mode}-keys.json`, { body: jwksOf(clientKey), headers: { 'cache-control': 'max-age=600' } });
  docs.route(`/who-may-${mode}-document-keys.json`, { body: jwksOf(documentKey), headers: { 'cache-control': 'max-age=600' } });

  const principals = new Map<Kind, Principal>();
  for (const kind of ['spec client', 'RFC 7591 confidential', 'public web', 'public native', 'deleted client'] as const) {
    const registered = await register(baseUrl, registration(kind === 'deleted client' ? 'spec client' : kind, keysUri)!);
    const isPublic = registered.client_secret === undefined;
    principals.set(kind, {
      kind, clientId: registered.client_id, isPublic, authorizes: true,
      redirectUri: kind === 'public native' ? NATIVE_REDIRECT : REDIRECT,
      secrets: isPublic ? {} : await rotated(baseUrl, registered.client_id, registered.client_secret!),
    });
  }
  principals.set('machine client', { kind: 'machine client', clientId: machine.client_id, isPublic: false, authorizes: false, redirectUri: REDIRECT, secrets: await rotated(baseUrl, machine.client_id, machine.client_secret) });
  const keyClient = await register(baseUrl, registration('private_key_jwt client', keysUri)!);
  principals.set('private_key_jwt client', { kind: 'private_key_jwt client', clientId: keyClient.client_id, isPublic: false, authorizes: true, redirectUri: REDIRECT, secrets: {}, key: clientKey });
  const documentUrl = docs.url(`/who-may-${mode}.json`);
  docs.route(`/who-may-${mode}.json`, {
    body: { client_id: documentUrl, client_name: 'Document Client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    headers: { 'cache-control': 'max-age=600' },
  });
  principals.set('metadata document', { kind: 'metadata document', clientId: documentUrl, secrets: {}, isPublic: true, authorizes: true, redirectUri: REDIRECT });
  // As ChatGPT publishes its own: private_key_jwt, RS256, its keys at a jwks_uri.
  const signedUrl = docs.url(`/who-may-${mode}-signed.json`);
  docs.route(`/who-may-${mode}-signed.json`, {
    body: {
      client_id: signedUrl, client_name: 'Signed Document Client', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'RS256', jwks_uri: docs.url(`/who-may-${mode}-document-keys.json`),
    },
    headers: { 'cache-control': 'max-age=600' },
  });
  principals.set('private_key_jwt document', { kind: 'private_key_jwt document', clientId: signedUrl, secrets: {}, isPublic: false, authorizes: true, redirectUri: REDIRECT, key: documentKey });
  principals.set('unknown id', { kind: 'unknown id', clientId: randomBytes(16).toString('base64url'), secrets: {}, isPublic: false, authorizes: false, redirectUri: REDIRECT });
  principals.set('user', { kind: 'user', clientId: USER.username, secrets: { current: USER.password }, isPublic: false, authorizes: false, redirectUri: REDIRECT });

  const browser = new Browser(baseUrl);
  const world: World = { baseUrl, mailbox, metricsUrl: `http://127.0.0.1:${metricsPort}`, principals, browser, stranger, keysUri, close: async () => {} };
  // Signed in and consented once per client, one at a time: every later code is a silent redirect.
  for (const p of principals.values()) if (p.authorizes) await code(world, p);
  // The deleted client held a token when an operator deleted it (the server stopped: the embedded database has one owner).
  const deleted = principals.get('deleted client')!;
  deleted.staleAccessToken = (await tokens(world, deleted)).access_token;
  await stopInstance(instance, { keepData: true });
  expectSuccess(await cli(['clients:delete', deleted.clientId]));
  principals.set('deleted client', { ...deleted, authorizes: false });
  instance = await startInstance(env, { dataDir, port: instance.port });
  world.close = async () => {
    await stopInstance(instance);
    await mailbox.close();
    await database?.drop();
    if (mode === 'postgres') await deleteRedisKeys(prefix);
  };
  return world;
}

/** One browser walks one authorization at a time (a native client is asked for consent each time, and one interaction at a time is a browser's). */
let authorizing: Promise<unknown> = Promise.resolve();

/** A fresh code for `p` (and its PKCE verifier, for a public client). */
function code(world: World, p: Principal): Promise<{ code: string; verifier?: string }> {
  const next = authorizing.then(() => authorize(world, p));
  authorizing = next.catch(() => undefined);
  return next;
}

async function authorize(world: World, p: Principal): Promise<{ code: string; verifier?: string }> {
  const pkce = p.isPublic ? pkcePair() : undefined;
  const redirect = await world.browser.authorize({ client_id: p.clientId, client_secret: '', redirect_uri: p.redirectUri }, USER, pkce ? pkceParams(pkce) : {});
  const value = redirect.searchParams.get('code');
  if (!value) throw new Error(`no code for ${p.kind}: ${redirect}`);
  return { code: value, ...(pkce ? { verifier: pkce.verifier } : {}) };
}

async function post(world: World, path: string, form: Record<string, string>, headers: Record<string, string> = {}) {
  return fetch(`${world.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(form), redirect: 'manual' });
}

/** A fresh assertion of `p`, signed with its key (or `signer`), for the issuer unless told otherwise. */
const assertion = (world: World, p: Principal, options: { signer?: TestKey; audience?: string; expired?: boolean } = {}) => signAssertion(options.signer ?? p.key!, {
  client: p.clientId, audience: options.audience ?? world.baseUrl, ...(options.expired ? { issuedIn: -400, expiresIn: -60 } : {}),
});

/** Fresh tokens of `p`, got its own proper way. */
async function tokens(world: World, p: Principal): Promise<{ access_token: string; refresh_token: string; id_token: string }> {
  const got = await code(world, p);
  const form: Record<string, string> = { grant_type: 'authorization_code', code: got.code, redirect_uri: p.redirectUri };
  if (got.verifier) Object.assign(form, { client_id: p.clientId, code_verifier: got.verifier });
  else if (p.key) Object.assign(form, assertionForm(await assertion(world, p)));
  else Object.assign(form, { client_id: p.clientId, client_secret: p.secrets.current! });
  const res = await post(world, '/api/token.php', form);
  if (res.status !== 200) throw new Error(`exchange for ${p.kind}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ access_token: string; refresh_token: string; id_token: string }>;
}

/** An access token of `p`'s own: a machine client's is the one client_credentials gives it. */
async function accessTokenOf(world: World, p: Principal): Promise<string> {
  if (p.kind !== 'machine client') return (await tokens(world, p)).access_token;
  const res = await post(world, '/api/token.php', { grant_type: 'client_credentials', resource: RESOURCE, client_id: p.clientId, client_secret: p.secrets.current! });
  if (res.status !== 200) throw new Error(`client_credentials for ${p.kind}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** The client whose codes and tokens are "another client's" for `p`, and whose secret is "another client's secret". */
const otherOf = (world: World, p: Principal) => world.principals.get(p.kind === 'spec client' ? 'RFC 7591 confidential' : 'spec client')!;

/** The key client whose key is "another client's key" for the key client `p`. */
const otherKeyOf = (world: World, p: Principal) => world.principals.get(p.kind === 'private_key_jwt client' ? 'private_key_jwt document' : 'private_key_jwt client')!;

/**
 * The client_assertion a key client presents as `credential` (its second table): fresh, empty, a
 * stranger's key, another client's key, one used once already, one expired, one for another
 * audience; undefined for `decoy` (a secret instead) and `foreign` (its own, with another's token).
 */
async function assertionAs(world: World, p: Principal, credential: Credential): Promise<string | undefined> {
  switch (credential) {
    case 'current': case 'foreign': return assertion(world, p);
    case 'empty': return '';
    case 'wrong': return assertion(world, p, { signer: world.stranger });
    case 'other': return assertion(world, p, { signer: otherKeyOf(world, p).key });
    case 'expired': return assertion(world, p, { expired: true });
    case 'audience': return assertion(world, p, { audience: 'https://elsewhere.example' });
    case 'replayed': {
      const used = await assertion(world, p);
      const spent = await post(world, '/api/introspect.php', { token: 'unknown', ...assertionForm(used) });
      if (spent.status !== 200) throw new Error(`spending an assertion of ${p.kind}: ${spent.status} ${await spent.text()}`);
      return used;
    }
    default: return undefined;
  }
}

/** How `p` authenticates as `credential` in a form: a secret (or a public client's id alone), or an assertion. */
async function clientAuth(world: World, p: Principal, credential: Credential): Promise<Record<string, string> | 'n/a'> {
  if (!p.key) {
    const secret = secretOf(world, p, credential);
    return secret === 'n/a' ? 'n/a' : clientForm(p, secret);
  }
  if (credential === 'decoy') return { client_id: p.clientId, client_secret: OLD_DECOY };
  const presented = (await assertionAs(world, p, credential))!;
  // An empty assertion says nothing of its client: the client_id does.
  return presented === '' ? { client_id: p.clientId, client_assertion_type: assertionForm('').client_assertion_type, client_assertion: '' } : assertionForm(presented);
}

/** The text `p` types where a secret or a password is asked (settings, webhooks API, applications page), as `credential`. */
async function typed(world: World, p: Principal, credential: Credential): Promise<Presented> {
  if (credential === 'foreign') return { value: (await tokens(world, otherOf(world, p))).access_token };
  if (!p.key) return secretOf(world, p, credential);
  if (credential === 'decoy') return { value: OLD_DECOY };
  return { value: (await assertionAs(world, p, credential))! };
}

/** The secret `p` presents as `credential` (for `foreign`: its own current way; the token is another's). */
function secretOf(world: World, p: Principal, credential: Credential): Presented {
  switch (credential) {
    case 'current':
    case 'foreign':
      if (p.kind === 'unknown id') return credential === 'current' ? 'n/a' : { value: randomBytes(32).toString('base64url') };
      return p.isPublic ? 'none' : { value: p.secrets.current! };
    case 'grace':
    case 'ended': {
      const value = p.secrets[credential];
      return value === undefined ? 'n/a' : { value };
    }
    case 'empty': return { value: '' };
    case 'wrong': return { value: randomBytes(32).toString('base64url') };
    case 'other': return { value: otherOf(world, p).secrets.current! };
    case 'decoy': return { value: OLD_DECOY };
    default: return 'n/a'; // the key clients' credentials: not secrets
  }
}

/** An answer as the table writes it: the status, and the error code or introspection's activity when JSON says one. */
async function answerOf(res: Response): Promise<string> {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').startsWith('application/json') || text === '') return String(res.status);
  const body = JSON.parse(text) as { error?: string; active?: boolean };
  if (body.error) return `${res.status} ${body.error}`;
  if (typeof body.active === 'boolean') return `${res.status} ${body.active ? 'active' : 'inactive'}`;
  return String(res.status);
}

/** Client credentials in a form: none for a public client's own way. */
function clientForm(p: Principal, secret: Presented): Record<string, string> {
  return { client_id: p.clientId, ...(secret === 'none' || secret === 'n/a' ? {} : { client_secret: secret.value }) };
}

type Attempt = (world: World, p: Principal, credential: Credential) => Promise<string>;

/** The surfaces that take a credential, as the tables' rows name them. */
const SURFACES: Record<string, Attempt> = {
  async 'token (code)'(world, p, credential) {
    const auth = await clientAuth(world, p, credential);
    if (auth === 'n/a') return 'n/a';
    const own = p.authorizes && credential !== 'foreign';
    const got = own ? await code(world, p) : await code(world, otherOf(world, p));
    const form: Record<string, string> = { grant_type: 'authorization_code', code: got.code, redirect_uri: p.redirectUri, ...auth };
    if (p.isPublic) form.code_verifier = got.verifier ?? pkcePair().verifier;
    return answerOf(await post(world, '/api/token.php', form));
  },
  async 'token (refresh)'(world, p, credential) {
    const auth = await clientAuth(world, p, credential);
    if (auth === 'n/a') return 'n/a';
    const own = p.authorizes && credential !== 'foreign';
    const { refresh_token: refreshToken } = await tokens(world, own ? p : otherOf(world, p));
    return answerOf(await post(world, '/api/token.php', { grant_type: 'refresh_token', refresh_token: refreshToken, ...auth }));
  },
  async 'token (client credentials)'(world, p, credential) {
    if (credential === 'foreign') return 'n/a'; // the grant carries no code or token to be another's
    const auth = await clientAuth(world, p, credential);
    if (auth === 'n/a') return 'n/a';
    return answerOf(await post(world, '/api/token.php', { grant_type: 'client_credentials', resource: RESOURCE, ...auth }));
  },
  async revocation(world, p, credential) {
    const auth = await clientAuth(world, p, credential);
    if (auth === 'n/a') return 'n/a';
    const token = (p.authorizes || p.kind === 'machine client') && credential !== 'foreign' ? await accessTokenOf(world, p) : p.staleAccessToken ?? (await tokens(world, otherOf(world, p))).access_token;
    return answerOf(await post(world, '/api/revoke.php', { token, ...auth }));
  },
  async introspection(world, p, credential) {
    const auth = await clientAuth(world, p, credential);
    if (auth === 'n/a') return 'n/a';
    const token = (p.authorizes || p.kind === 'machine client') && credential !== 'foreign' ? await accessTokenOf(world, p) : p.staleAccessToken ?? (await tokens(world, otherOf(world, p))).access_token;
    return answerOf(await post(world, '/api/introspect.php', { token, ...auth }));
  },
  async userinfo(world, p, credential) {
    // The credential here is a bearer token: the principal's own (current), another client's
    // (foreign), or a secret (or an assertion) presented as if it were one.
    let bearer: string | undefined;
    if (credential === 'current') {
      if (p.authorizes || p.kind === 'machine client') bearer = await accessTokenOf(world, p);
      else if (p.staleAccessToken) bearer = p.staleAccessToken;
      else return 'n/a';
    } else {
      const presented = await typed(world, p, credential);
      if (presented === 'n/a') return 'n/a';
      bearer = presented === 'none' ? undefined : presented.value || undefined;
    }
    return answerOf(await fetch(`${world.baseUrl}/api/userinfo.php`, { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } }));
  },
  async 'settings sign-in'(world, p, credential) {
    const presented = await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    return formPost(world, '/api/settings.php', '/api/settings.php?action=sign_in', { client_id: p.clientId, client_secret: presented === 'none' ? '' : presented.value });
  },
  async 'webhooks API'(world, p, credential) {
    const presented = await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    const basic = Buffer.from(`${encodeURIComponent(p.clientId)}:${encodeURIComponent(presented === 'none' ? '' : presented.value)}`).toString('base64');
    return answerOf(await fetch(`${world.baseUrl}/api/webhooks.php`, { headers: { authorization: `Basic ${basic}` } }));
  },
  'registration (locked)': (world, p, credential) => registrationAttempt(world, world.baseUrl, p, credential),
  async 'registration page (locked)'(world, p, credential) {
    if (p.kind !== 'spec client') return 'n/a';
    const token = await registrationToken(world, p, credential);
    if (token === 'n/a') return 'n/a';
    return formPost(world, '/api/register.php', '/api/register.php', { client_name: 'Form Client', redirect_uri: REDIRECT, initial_access_token: token ?? '' });
  },
  // Surfaces that trust nothing a request carries: whatever is presented (as a bearer token) changes nothing.
  discovery: (world, p, credential) => carrying(world, p, credential, `${world.baseUrl}/.well-known/oauth-authorization-server`),
  JWKS: (world, p, credential) => carrying(world, p, credential, `${world.baseUrl}/api/jwks.php`),
  readiness: (world, p, credential) => carrying(world, p, credential, `${world.baseUrl}/healthz/ready`),
  metrics: (world, p, credential) => carrying(world, p, credential, `${world.metricsUrl}/metrics`),
  'metrics on the public port': (world, p, credential) => carrying(world, p, credential, `${world.baseUrl}/metrics`),
  // The id_token_hint an application sends to /api/logout.php: its own ID token (current), another
  // client's (foreign), or a secret in its place. A hint only names who asks; the user decides.
  async logout(world, p, credential) {
    let hint: string | undefined;
    if (credential === 'current' || credential === 'foreign') {
      const owner = credential === 'current' ? p : otherOf(world, p);
      if (!owner.authorizes) return 'n/a';
      hint = (await tokens(world, owner)).id_token;
    } else {
      const presented = await typed(world, p, credential);
      if (presented === 'n/a') return 'n/a';
      hint = presented === 'none' || presented.value === '' ? undefined : presented.value;
    }
    return String((await new Browser(world.baseUrl).request(`/api/logout.php${hint === undefined ? '' : `?${new URLSearchParams({ id_token_hint: hint })}`}`)).status);
  },
  // What ends a session and sends back-channel logout tokens: the logout page's answer, with the
  // session's own anti-forgery secret. Anything presented in its place ends nothing.
  async 'back-channel logout'(world, p, credential) {
    const presented = credential === 'foreign' ? { value: (await tokens(world, otherOf(world, p))).id_token } : await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    const form = { logout: 'yes', ...(presented === 'none' ? {} : { xsrf: presented.value }) };
    return String((await new Browser(world.baseUrl).request('/api/logout.php/confirm', { form })).status);
  },
  'account: change password': (world, p, credential) => accountForm(world, p, credential, 'change_password', true),
  'account: sign out everywhere': (world, p, credential) => accountForm(world, p, credential, 'sign_out_everywhere', false),
  'account: verify address': (world, p, credential) => accountForm(world, p, credential, 'verify_email', false),
  // Anyone may ask: the answer is the same for every address and whatever a request carries.
  async 'forgot-password request'(world, p, credential) {
    const presented = await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    const bearer: Record<string, string> = presented === 'none' || presented.value === '' ? {} : { authorization: `Bearer ${presented.value}` };
    return formPost(world, '/api/forgot-password.php', '/api/forgot-password.php', { email: 'nobody@example.com' }, { 'x-forwarded-for': freshAddress(), ...bearer });
  },
  // The credential is the link's token: a live one mailed to the account user (`user`, `current`), or whatever else is typed.
  async 'reset link'(world, p, credential) {
    const presented = await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    const token = p.kind === 'user' && credential === 'current' ? await freshResetToken(world) : presented === 'none' ? '' : presented.value;
    const browser = new Browser(world.baseUrl);
    const page = await browser.request(`/api/reset-password.php?token=${encodeURIComponent(token)}`);
    if (page.status !== 200) return String(page.status);
    const set = { _csrf: csrfOf(page), token, new_password: ACCOUNT.password, new_password_again: ACCOUNT.password };
    return String((await browser.request('/api/reset-password.php', { form: set })).status);
  },
  async 'applications sign-in'(world, p, credential) {
    const presented = await typed(world, p, credential);
    if (presented === 'n/a') return 'n/a';
    return formPost(world, '/api/applications.php', '/api/applications.php', { action: 'sign_in', username: p.clientId, password: presented === 'none' ? '' : presented.value }, { 'x-forwarded-for': freshAddress() });
  },
};

/**
 * One of the account page's forms, as `p` would post it: signed in on the page with its credential
 * (the `user` column: the account user, with its password for `current`), then the form with the
 * page's token. Where a password is asked (the current one, and the new one: the same again),
 * the credential is typed. Not signed in, the form answers 401 (the sign-in page).
 */
async function accountForm(world: World, p: Principal, credential: Credential, action: string, withPassword: boolean): Promise<string> {
  const presented = await typed(world, p, credential);
  if (presented === 'n/a') return 'n/a';
  const own = p.kind === 'user';
  const password = own && credential === 'current' ? ACCOUNT.password : presented === 'none' ? '' : presented.value;
  const headers = { 'x-forwarded-for': freshAddress() };
  const browser = new Browser(world.baseUrl);
  const signIn = await browser.request('/api/applications.php', { headers });
  await browser.request('/api/applications.php', { form: { _csrf: csrfOf(signIn), action: 'sign_in', username: own ? ACCOUNT.username : p.clientId, password }, headers });
  const page = await browser.request('/api/applications.php', { headers });
  const fields: Record<string, string> = withPassword ? { current_password: password, new_password: password, new_password_again: password } : {};
  return String((await browser.request('/api/applications.php', { form: { _csrf: csrfOf(page), action, ...fields }, headers })).status);
}

/** Reset mails to the account user already followed (each link is used once). */
const followed = new Set<string>();

/** A live reset link's token for the account user: asked for on the form, read from the mail. */
async function freshResetToken(world: World): Promise<string> {
  const headers = { 'x-forwarded-for': freshAddress() };
  const browser = new Browser(world.baseUrl);
  const form = await browser.request('/api/forgot-password.php', { headers });
  await browser.request('/api/forgot-password.php', { form: { _csrf: csrfOf(form), email: ACCOUNT.email }, headers });
  for (let i = 0; i < 300; i += 1) {
    const link = world.mailbox.received.flatMap((mail) => mail.links).find((url) => url.includes('/api/reset-password.php') && !followed.has(url));
    if (link) {
      followed.add(link);
      return new URL(link).searchParams.get('token')!;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('no reset mail for the account user');
}

const csrfOf = (page: { body: string }) => /name="_csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';

/** A GET of `url` carrying the principal's credential as a bearer token (none for a public client's own way, or an empty one). */
async function carrying(world: World, p: Principal, credential: Credential, url: string): Promise<string> {
  const secret = await typed(world, p, credential);
  if (secret === 'n/a') return 'n/a';
  const bearer = secret === 'none' || secret.value === '' ? undefined : secret.value;
  return answerOf(await fetch(url, { headers: bearer === undefined ? {} : { authorization: `Bearer ${bearer}` } }));
}

/** A page's form posted as a browser does (its anti-forgery token from the page): the status of the answer itself. */
async function formPost(world: World, pagePath: string, action: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<string> {
  const browser = new Browser(world.baseUrl);
  const page = await browser.request(pagePath, { headers });
  const csrf = /name="_csrf" value="([^"]*)"/.exec(page.body)![1]!;
  return String((await browser.request(action, { form: { _csrf: csrf, ...fields }, headers })).status);
}

/** An address no other attempt of this run came from. */
let addresses = 0;
const freshAddress = () => { addresses += 1; return `10.${(addresses >> 16) & 255}.${(addresses >> 8) & 255}.${addresses & 255}`; };

/** The Bearer a registration presents as `credential`: the initial access token (current), none (empty), or something else. */
async function registrationToken(world: World, p: Principal, credential: Credential): Promise<string | undefined | 'n/a'> {
  switch (credential) {
    case 'current': return INITIAL_ACCESS_TOKEN;
    case 'grace': case 'ended': return 'n/a';
    case 'empty': return undefined;
    case 'wrong': return randomBytes(16).toString('hex');
    case 'other': return otherOf(world, p).secrets.current!;
    case 'decoy': return OLD_DECOY;
    case 'foreign': return (await tokens(world, otherOf(world, p))).access_token;
    // A key client's own assertions are no initial access token either.
    default: return assertionAs(world, p, credential);
  }
}

async function registrationAttempt(world: World, baseUrl: string, p: Principal, credential: Credential): Promise<string> {
  const body = registration(p.kind, world.keysUri);
  if (!body) return 'n/a';
  const token = await registrationToken(world, p, credential);
  if (token === 'n/a') return 'n/a';
  const res = await fetch(`${baseUrl}/api/register.php`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: JSON.stringify(body),
  });
  return answerOf(res);
}

/** Runs `work` over `items`, `width` at a time. */
async function pooled<T>(items: T[], width: number, work: (item: T) => Promise<void>) {
  const queue = [...items];
  await Promise.all(Array.from({ length: width }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  }));
}

const TABLES = [
  { name: 'secrets', table: readAccessTable(SECRETS), kinds: KINDS },
  { name: 'key clients', table: readAccessTable(KEYS), kinds: KEY_KINDS },
] as const;

test.each(TABLES)('the $name table names the surfaces and principals the walk knows, and no others', ({ table, kinds }) => {
  expect([...table.rows].sort()).toEqual([...Object.keys(SURFACES), 'registration (open)'].sort());
  expect(table.columns).toEqual([...kinds]);
});

describeWithOpenssl('who may do what, walked against the running service', () => {
  let tls: Certificates;
  let docs: DocumentServer;
  beforeAll(async () => {
    tls = makeCertificates();
    docs = await startDocumentServer(tls);
  });
  afterAll(async () => {
    await docs?.close();
    tls?.remove();
  });

  describe.each(['postgres', 'embedded'] as const)('%s', (mode) => {
    let world: World;
    beforeAll(async () => { world = await startWorld(mode, tls, docs); }, 240_000);
    afterAll(async () => { await world?.close(); });

    const walks = TABLES.flatMap(({ name, table, kinds }) => Object.keys(SURFACES).map((row) => ({ name, table, kinds, row })));
    test.each(walks)('$name, $row: every principal, every credential', async ({ table, kinds, row }) => {
      const observed = new Map<string, string>();
      const cells = kinds.flatMap((kind) => table.credentials.map((credential) => ({ kind, credential })));
      // A revocation that succeeds ends its grant, and with it the codes the walk is redeeming: one at a time there.
      await pooled(cells, row === 'revocation' ? 1 : 4, async ({ kind, credential }) => {
        observed.set(`${kind}/${credential}`, await SURFACES[row]!(world, world.principals.get(kind)!, credential));
      });
      if (process.env.PRINT_ACCESS_TABLE) console.log(`${row}:\n${kinds.map((kind) => `  ${kind}: ${table.credentials.map((c) => `${c} → ${observed.get(`${kind}/${c}`)}`).join(' · ')}`).join('\n')}`);
      const mismatches = cells.filter(({ kind, credential }) => observed.get(`${kind}/${credential}`) !== table.expected(row, kind, credential))
        .map(({ kind, credential }) => `${kind} / ${credential}: the table says ${table.expected(row, kind, credential)}, the service answered ${observed.get(`${kind}/${credential}`)}`);
      expect(mismatches).toEqual([]);
    }, 120_000);

    test('registration (open): every door registers without a token', async () => {
      // A second service on its own data, with the lock off.
      const store: Record<string, string> = mode === 'postgres' ? { DATABASE_URL: (await createTestDatabase({ migrated: true })).url, REDIS_URL, REDIS_KEY_PREFIX: testRedisPrefix() } : {};
      const dataDir = tempDataDir('who-may-open');
      if (mode === 'embedded') await copyMigratedPglite(dataDir);
      const open = await startInstance({ ...store, ...OPEN_ENV, KEYS_ENCRYPTION_KEY: TEST_KEYS_ENCRYPTION_KEY }, { dataDir });
      try {
        const mismatches: string[] = [];
        for (const { table, kinds } of TABLES) {
          for (const kind of kinds) {
            for (const credential of table.credentials) {
              const answer = await registrationAttempt(world, open.baseUrl, world.principals.get(kind)!, credential);
              if (answer !== table.expected('registration (open)', kind, credential)) mismatches.push(`${kind} / ${credential}: the table says ${table.expected('registration (open)', kind, credential)}, the service answered ${answer}`);
            }
          }
        }
        expect(mismatches).toEqual([]);
      } finally {
        await stopInstance(open);
        if (store.DATABASE_URL) await dropDatabase(store.DATABASE_URL);
      }
    }, 120_000);
  });
});

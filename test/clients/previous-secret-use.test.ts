/**
 * After a rotation with a grace, the previous client secret is accepted by one rule wherever a
 * client uses OAuth (the token, revocation and introspection endpoints), and every use is reported
 * so an operator sees who still uses it: a `warn` line naming the client and the request (never
 * the secret), and `oauth_client_previous_secret_uses_total{client_id}` on METRICS_PORT. Managing
 * the client (the settings sign-in, the webhooks API) takes the current secret only: the previous
 * one is refused there as a wrong one, with a `warn` line of its own and no count. The current
 * secret is neither logged nor counted.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { hashClientSecret, matchClientSecret } from '../../src/clients/credentials.js';
import { createLogger } from '../../src/ops/logger.js';
import { Browser } from '../helpers/browser.js';
import { basicAuth, createUser, postForm, registerClient, tokenRequest } from '../helpers/fixtures.js';
import { describeWithParser, parsePrometheusText, sampleValue } from '../helpers/prometheus-text.js';
import { webhooksApi } from '../helpers/receiver.js';
import { pageText, postSettingsForm, signInOnSettingsPage } from '../helpers/settings-page.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

describe('matchClientSecret', () => {
  const digests = { current: hashClientSecret('new'), previous: hashClientSecret('old'), previousUntil: new Date('2026-11-27T12:00:00Z') };
  test('the current secret always; the previous one only before its grace ends; anything else never', () => {
    const before = new Date('2026-11-27T11:59:59.999Z');
    const at = new Date('2026-11-27T12:00:00Z');
    expect(matchClientSecret('new', digests, at)).toBe('current');
    expect(matchClientSecret('old', digests, before)).toBe('previous');
    expect(matchClientSecret('old', digests, at)).toBeUndefined();
    expect(matchClientSecret('other', digests, before)).toBeUndefined();
    expect(matchClientSecret('old', { ...digests, previousUntil: null }, before)).toBeUndefined();
    expect(matchClientSecret('old', { current: digests.current }, before)).toBeUndefined();
    expect(matchClientSecret('', { current: digests.current, previous: null, previousUntil: digests.previousUntil }, before)).toBeUndefined();
  });
});

type Line = Record<string, unknown>;

describe('a use of the previous secret, on PostgreSQL and Redis with METRICS_PORT', () => {
  const chunks: string[] = [];
  const lines = (): Line[] => chunks.join('').split('\n').filter(Boolean).map((line) => JSON.parse(line) as Line);
  const reports = (clientId: string) => lines().filter((line) => line.msg === 'previous client secret used' && line.client_id === clientId);
  const refusals = (clientId: string) => lines().filter((line) => line.msg === 'previous client secret refused: managing a client takes its current secret' && line.client_id === clientId);
  let t: TestApp;
  beforeAll(async () => {
    const logger = createLogger({ level: 'info', destination: { write: (chunk: string) => { chunks.push(chunk); } } });
    t = await startTestApp({ logger, env: { METRICS_PORT: '0' } });
  });
  afterAll(async () => { await t?.close(); });

  /** A client whose secret was rotated with a grace on its settings page, and a user to sign in. */
  async function rotated() {
    const client = await registerClient(t);
    const user = await createUser(t);
    const settings = new Browser(t.baseUrl);
    const page = await postSettingsForm(settings, await signInOnSettingsPage(settings, client), 'rotate_secret', { grace: '1h' });
    return { client, user, newSecret: pageText(page, 'new_client_secret')!, until: pageText(page, 'previous_secret_expires_at')! };
  }
  type Rotated = Awaited<ReturnType<typeof rotated>>;

  /** The new secret: a code exchange and the webhooks API. */
  async function useNewSecret({ client, user, newSecret }: Rotated) {
    const code = (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!;
    expect((await tokenRequest(t, { code, client_id: client.client_id, client_secret: newSecret })).status).toBe(200);
    expect((await webhooksApi(t.baseUrl, { ...client, client_secret: newSecret })).status).toBe(200);
  }

  /**
   * The old secret, three ways that use OAuth (a code exchange with Basic, a refresh with the form,
   * introspection): their request ids; and two ways that manage the client, refused as a wrong
   * secret would be (the settings sign-in, the webhooks API).
   */
  async function useOldSecret({ client, user }: Rotated): Promise<string[]> {
    const requestIds: string[] = [];
    const send = async (res: { status: number; headers: Headers }) => {
      expect(res.status).toBe(200);
      requestIds.push(res.headers.get('x-request-id')!);
    };
    const tokens = await tokenRequest(t, { code: (await new Browser(t.baseUrl).authorize(client, user)).searchParams.get('code')!, redirect_uri: client.redirect_uri }, { authorization: basicAuth(client) });
    await send(tokens);
    await send(await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: String(tokens.body.refresh_token), client_id: client.client_id, client_secret: client.client_secret }));
    await send(await postForm(t, '/api/introspect.php', { token: String(tokens.body.access_token), client_id: client.client_id, client_secret: client.client_secret }));
    expect((await signInOnSettingsPage(new Browser(t.baseUrl), client)).status).toBe(401);
    expect((await webhooksApi(t.baseUrl, client)).status).toBe(401);
    return requestIds;
  }

  test('is accepted where the client uses OAuth, each use one warn line (client and request, no secret); refused to manage the client', async () => {
    const secrets = await rotated();
    const { client, until, newSecret } = secrets;
    await useNewSecret(secrets);
    expect(reports(client.client_id)).toEqual([]);

    const requestIds = await useOldSecret(secrets);
    const reported = reports(client.client_id);
    expect(reported).toHaveLength(3);
    for (const line of reported) {
      expect(line).toMatchObject({ level: 40, client_id: client.client_id, previous_secret_expires_at: until, request_id: expect.any(String) });
    }
    expect(reported.map((line) => line.request_id)).toEqual(requestIds);
    expect(refusals(client.client_id)).toHaveLength(2);
    const text = chunks.join('');
    expect(text).not.toContain(client.client_secret);
    expect(text).not.toContain(newSecret);
  });

  describeWithParser('counted on METRICS_PORT', () => {
    const uses = async (clientId: string) => {
      const res = await fetch(`http://127.0.0.1:${t.app.metricsPort}/metrics`);
      return sampleValue(await parsePrometheusText(await res.text()), 'oauth_client_previous_secret_uses_total', { client_id: clientId }) ?? 0;
    };

    test('each use of the old secret is one count in oauth_client_previous_secret_uses_total; the new one is not counted, nor a refused one', async () => {
      const secrets = await rotated();
      await useNewSecret(secrets);
      expect(await uses(secrets.client.client_id)).toBe(0);
      await useOldSecret(secrets);
      expect(await uses(secrets.client.client_id)).toBe(3);
    });
  });
});

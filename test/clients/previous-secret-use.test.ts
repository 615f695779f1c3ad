/**
 * After a rotation with a grace, the previous client secret is accepted by one rule wherever a
 * client authenticates (the token, revocation and introspection endpoints, the settings sign-in,
 * the webhooks API), and every use is reported so an operator sees who still uses it: a `warn`
 * line naming the client and the request (never the secret), and
 * `oauth_client_previous_secret_uses_total{client_id}` on METRICS_PORT. The current secret is
 * neither logged nor counted.
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

  /** The old secret, five ways: a code exchange (Basic), a refresh (form), introspection, the settings sign-in, the webhooks API; their request ids. */
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
    await send(await signInOnSettingsPage(new Browser(t.baseUrl), client));
    await send(await webhooksApi(t.baseUrl, client));
    return requestIds;
  }

  test('is accepted everywhere a client authenticates, and each use is one warn line (client and request, no secret)', async () => {
    const secrets = await rotated();
    const { client, until, newSecret } = secrets;
    await useNewSecret(secrets);
    expect(reports(client.client_id)).toEqual([]);

    const requestIds = await useOldSecret(secrets);
    const reported = reports(client.client_id);
    expect(reported).toHaveLength(5);
    for (const line of reported) {
      expect(line).toMatchObject({ level: 40, client_id: client.client_id, previous_secret_expires_at: until, request_id: expect.any(String) });
    }
    // The sign-in's page was reached through a redirect: its report names the POST's request, not the GET's.
    expect(reported.map((line) => line.request_id)).toEqual(expect.arrayContaining(requestIds.filter((_, i) => i !== 3)));
    const text = chunks.join('');
    expect(text).not.toContain(client.client_secret);
    expect(text).not.toContain(newSecret);
  });

  describeWithParser('counted on METRICS_PORT', () => {
    const uses = async (clientId: string) => {
      const res = await fetch(`http://127.0.0.1:${t.app.metricsPort}/metrics`);
      return sampleValue(await parsePrometheusText(await res.text()), 'oauth_client_previous_secret_uses_total', { client_id: clientId }) ?? 0;
    };

    test('each use of the old secret is one count in oauth_client_previous_secret_uses_total; the new one is not counted', async () => {
      const secrets = await rotated();
      await useNewSecret(secrets);
      expect(await uses(secrets.client.client_id)).toBe(0);
      await useOldSecret(secrets);
      expect(await uses(secrets.client.client_id)).toBe(5);
    });
  });
});

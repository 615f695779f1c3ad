/**
 * The consent's audit row is stored with the grant it records, in the request's one write
 * statement: when the grant cannot be stored, neither is the row, so the trail never tells of a
 * consent that was not given. The grant's write is made to fail by a trigger on this test's own
 * database.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Browser } from '../helpers/browser.js';
import type { TestClient } from '../helpers/browser.js';
import { createUser, registerClient } from '../helpers/fixtures.js';
import { startTestApp } from '../helpers/test-app.js';
import type { TestApp } from '../helpers/test-app.js';

let t: TestApp;
let client: TestClient;
beforeAll(async () => {
  t = await startTestApp();
  client = await registerClient(t);
});
afterAll(async () => { await t?.close(); });

test('a consent whose grant is not stored leaves no consent.granted row; once grants are stored again, both are', async () => {
  const user = await createUser(t);
  await t.app.db.prisma.$executeRawUnsafe(`CREATE FUNCTION refuse_grants() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.type = 'Grant' THEN RAISE EXCEPTION 'grants refused by the test'; END IF; RETURN NEW; END $$`);
  await t.app.db.prisma.$executeRawUnsafe('CREATE TRIGGER refuse_grants BEFORE INSERT OR UPDATE ON oidc_models FOR EACH ROW EXECUTE FUNCTION refuse_grants()');
  const grants = () => t.app.db.prisma.$queryRawUnsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM oidc_models WHERE type = 'Grant'");
  const consents = () => t.app.db.prisma.auditEvent.count({ where: { event: 'consent.granted', clientId: client.client_id } });

  const browser = new Browser(t.baseUrl);
  let page = await browser.follow(`/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`);
  page = await browser.submit(page, '/login', { username: user.username, password: user.password });
  expect(page.body).toContain('/confirm"');
  const refused = await browser.submit(page, '/confirm');
  expect(refused.location ?? '').not.toContain('code=');
  expect(await grants()).toEqual([{ n: 0 }]);
  expect(await consents()).toBe(0);

  await t.app.db.prisma.$executeRawUnsafe('DROP TRIGGER refuse_grants ON oidc_models');
  const redirect = await new Browser(t.baseUrl).authorize(client, user);
  expect(redirect.searchParams.get('code')).toBeTruthy();
  expect(await grants()).toEqual([{ n: 1 }]);
  expect(await consents()).toBe(1);
});

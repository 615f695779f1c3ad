/**
 * One user's whole Authorization Code flow against a started service, as a browser and a
 * client would walk it, each step timed: authorize → login → consent → token → userinfo →
 * refresh → revoke → sign_out. Revoke (RFC 7009, ends the grant) and sign-out (the
 * applications page ends the login session) close the flow so a steady load leaves nothing
 * behind but what expires by itself.
 *
 * @example const { timings } = await runFlow(baseUrl, client, user);
 */
import http from 'node:http';

export const STEPS = ['authorize', 'login', 'consent', 'token', 'userinfo', 'refresh', 'revoke', 'sign_out'];

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One HTTP request on kept-alive connections, redirects not followed; unanswered in 30 s it fails.
 * Node's own client: a third of the CPU `fetch` spends a request (the bench's login driver uses it
 * too, bench/lib/browser.mjs, on the cores of the service it measures).
 */
export function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${url}: no answer in 30 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** A cookie jar honouring cookie paths (the interaction cookie is scoped to /interaction/<uid>). */
export class Jar {
  cookies = [];

  header(url) {
    return this.cookies.filter((c) => c.path === '/' || url.pathname === c.path || url.pathname.startsWith(`${c.path.replace(/\/$/, '')}/`))
      .map((c) => `${c.name}=${c.value}`).join('; ');
  }

  store(url, setCookie = []) {
    for (const line of setCookie) {
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const pathAttr = attributes.find((a) => a.toLowerCase().startsWith('path='));
      const path = pathAttr ? pathAttr.slice(5) : url.pathname.replace(/\/[^/]*$/, '') || '/';
      this.cookies = this.cookies.filter((c) => !(c.name === name && c.path === path));
      if (value && !attributes.some((a) => /^expires=thu, 01 jan 1970/i.test(a))) this.cookies.push({ name, value, path });
    }
  }
}

class FlowError extends Error {
  constructor(step, message) {
    super(`${step}: ${message}`);
    this.step = step;
  }
}

/** Browser request with cookies; follows redirects inside the service; stops at a page or a redirect leaving it. */
async function browse(jar, baseUrl, target, init = {}) {
  let url = new URL(target, baseUrl);
  let options = init;
  for (let hop = 0; hop < 10; hop += 1) {
    const headers = { accept: 'text/html', ...options.headers };
    const cookie = jar.header(url);
    if (cookie) headers.cookie = cookie;
    const res = await request(url, { ...options, headers });
    jar.store(url, res.headers['set-cookie']);
    const location = res.headers.location && new URL(res.headers.location, url);
    if (!location || location.origin !== new URL(baseUrl).origin) return { ...res, url, location };
    url = location;
    options = {};
  }
  throw new Error('too many redirects');
}

function form(page, action) {
  const match = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => m[1].endsWith(action));
  if (!match) return undefined;
  return { action: new URL(match[1].replace(/&amp;/g, '&'), page.url), csrf: /name="_csrf" value="([^"]*)"/.exec(match[2])?.[1] ?? '' };
}

function post(jar, baseUrl, target, fields) {
  return browse(jar, baseUrl, target, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

async function api(baseUrl, path, { fields, bearer }) {
  const headers = bearer ? { authorization: `Bearer ${bearer}` } : { 'content-type': 'application/x-www-form-urlencoded' };
  const res = await request(new URL(path, baseUrl), { method: fields ? 'POST' : 'GET', headers, body: fields && new URLSearchParams(fields).toString() });
  return { status: res.status, json: res.body ? JSON.parse(res.body) : {} };
}

/** Walks the whole flow once; resolves `{ timings: {step: ms} }`, rejects with a FlowError naming the step. */
export async function runFlow(baseUrl, client, user) {
  const jar = new Jar();
  const timings = {};
  const timed = async (step, run) => {
    const started = performance.now();
    const result = await run();
    timings[step] = performance.now() - started;
    return result;
  };
  const credentials = { client_id: client.client_id, client_secret: client.client_secret };
  const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', state: 'soak' });

  const loginPage = await timed('authorize', () => browse(jar, baseUrl, `/api/authorize.php?${query}`));
  const login = form(loginPage, '/login');
  if (!login) throw new FlowError('authorize', `no login page (${loginPage.status})`);
  const consentPage = await timed('login', () => post(jar, baseUrl, login.action, { _csrf: login.csrf, username: user.username, password: user.password }));
  const confirm = form(consentPage, '/confirm');
  if (!confirm) throw new FlowError('login', `no consent page (${consentPage.status})`);
  const redirect = await timed('consent', () => post(jar, baseUrl, confirm.action, { _csrf: confirm.csrf }));
  const code = redirect.location?.searchParams.get('code');
  if (!code) throw new FlowError('consent', `no code (${redirect.status} ${redirect.location ?? ''})`);

  const tokens = await timed('token', () => api(baseUrl, '/api/token.php', { fields: { code, ...credentials } }));
  if (tokens.status !== 200) throw new FlowError('token', `${tokens.status} ${JSON.stringify(tokens.json)}`);
  const profile = await timed('userinfo', () => api(baseUrl, '/api/userinfo.php', { bearer: tokens.json.access_token }));
  if (profile.status !== 200) throw new FlowError('userinfo', `${profile.status} ${JSON.stringify(profile.json)}`);
  const refreshed = await timed('refresh', () => api(baseUrl, '/api/token.php', { fields: { grant_type: 'refresh_token', refresh_token: tokens.json.refresh_token, ...credentials } }));
  if (refreshed.status !== 200) throw new FlowError('refresh', `${refreshed.status} ${JSON.stringify(refreshed.json)}`);
  const revoked = await timed('revoke', () => api(baseUrl, '/api/revoke.php', { fields: { token: refreshed.json.refresh_token, ...credentials } }));
  if (revoked.status !== 200) throw new FlowError('revoke', `${revoked.status} ${JSON.stringify(revoked.json)}`);

  await timed('sign_out', async () => {
    const page = await browse(jar, baseUrl, '/api/applications.php');
    const signOut = form(page, '/api/applications.php');
    if (!signOut || !page.body.includes('sign_out')) throw new FlowError('sign_out', `not signed in on the applications page (${page.status})`);
    const done = await post(jar, baseUrl, '/api/applications.php', { _csrf: signOut.csrf, action: 'sign_out' });
    if (done.status >= 400) throw new FlowError('sign_out', String(done.status));
  });
  return { timings };
}

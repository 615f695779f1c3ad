/**
 * A cookie-keeping client that walks the service's login and consent pages as a browser
 * does (honouring cookie paths: the interaction cookie is scoped to /interaction/<uid>).
 * The bench uses it to mint codes through the service's own pages, never by writing rows.
 *
 * @example const { code } = await new Browser(base).authorize(client, user);
 */
// The soak's flow client (scripts/lib/flow-client.mjs): Node's own HTTP client on kept-alive
// connections, with a bound (a third of the CPU `fetch` spends, on the cores the load driver
// shares with the service), and its cookie jar.
import { Jar, request as send } from '../../scripts/lib/flow-client.mjs';

export class Browser {
  constructor(baseUrl) {
    this.baseUrl = baseUrl;
    this.jar = new Jar();
  }

  /** The cookies a request to `target` carries (for a load driver that replays a session). */
  cookiesFor(target) {
    return this.jar.header(new URL(target, this.baseUrl));
  }

  /** One request, no redirect following. */
  async request(target, { method, form } = {}) {
    const url = new URL(target, this.baseUrl);
    const headers = { accept: 'text/html' };
    const cookie = this.jar.header(url);
    if (cookie) headers.cookie = cookie;
    let body;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await send(url, { method: method ?? (body ? 'POST' : 'GET'), headers, body });
    this.jar.store(url, res.headers['set-cookie']);
    const { location } = res.headers;
    return { status: res.status, location: location ? new URL(location, url).toString() : undefined, body: res.body };
  }

  /** Follows redirects within the service; stops at a page or at a redirect leaving it. */
  async follow(target) {
    let url = new URL(target, this.baseUrl).toString();
    for (let hop = 0; hop < 10; hop += 1) {
      const step = await this.request(url);
      if (!step.location || !step.location.startsWith(this.baseUrl)) return { ...step, url };
      url = step.location;
    }
    throw new Error('too many redirects');
  }

  /** Submits the form on `page` whose action ends with `action`, with the page's CSRF token. */
  async submit(page, action, fields = {}) {
    const forms = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)];
    const form = forms.find((match) => match[1].endsWith(action));
    if (!form) throw new Error(`no form posting to ${action} on ${page.url} (${page.status})`);
    const csrf = /name="_csrf" value="([^"]*)"/.exec(form[2])?.[1] ?? '';
    const step = await this.request(new URL(form[1].replace(/&amp;/g, '&'), page.url).toString(), { form: { _csrf: csrf, ...fields } });
    if (step.location?.startsWith(this.baseUrl)) return this.follow(step.location);
    return { ...step, url: page.url };
  }

  /** Authorize, log in if asked, approve if asked; returns the code of the redirect to the client. */
  async authorize(client, user) {
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' });
    let page = await this.follow(`/api/authorize.php?${query}`);
    if (page.body.includes('/login"')) page = await this.submit(page, '/login', { username: user.username, password: user.password });
    if (page.body.includes('/confirm"')) page = await this.submit(page, '/confirm');
    const code = page.location && new URL(page.location).searchParams.get('code');
    if (!code) throw new Error(`the flow ended without a code (${page.status} ${page.location ?? ''}): ${page.body.slice(0, 300)}`);
    return code;
  }
}

/** The URL of a silent authorization request (a session and a consent already exist). */
export function authorizePath(client) {
  return `/api/authorize.php?${new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code' })}`;
}

/**
 * A minimal cookie-keeping HTTP client that walks the login and consent pages as a browser
 * would, honouring cookie paths (the interaction cookie is scoped to /interaction/<uid>).
 *
 * @example const code = await new Browser(t.baseUrl).authorize(client, alice);
 */
export interface TestClient {
  client_id: string;
  client_secret: string;
  redirect_uri: string;
}

export interface TestUser {
  username: string;
  password: string;
}

interface Cookie { name: string; value: string; path: string }

export interface Step {
  status: number;
  location: string | undefined;
  body: string;
  headers: Headers;
}

/** A TLS-terminating proxy in front of the app: where requests really go, and the headers it adds. */
export interface ForwardingProxy {
  origin: string;
  headers: Record<string, string>;
}

/** Instances that answer as another origin (their BASE_URL, shared as behind one balancer), by their own origin. */
const answersAs = new Map<string, string>();

/**
 * `instanceUrl` answers as `publicUrl` (its BASE_URL): a browser of that instance follows the
 * redirects to `publicUrl` to the instance itself, as a balancer that keeps it on one instance would.
 */
export function instanceAnswersAs(instanceUrl: string, publicUrl: string): void {
  answersAs.set(new URL(instanceUrl).origin, new URL(publicUrl).origin);
}

export class Browser {
  private cookies: Cookie[] = [];

  /** `proxy`: requests for `baseUrl` go to `proxy.origin` with `proxy.headers` (say, X-Forwarded-Proto). */
  constructor(readonly baseUrl: string, private readonly proxy?: ForwardingProxy) {}

  /** All Set-Cookie headers seen, for checking flags. */
  readonly setCookies: string[] = [];

  /** The last consent page {@link authorize} answered (its HTML). */
  consentPage: string | undefined;

  private cookieHeader(url: URL): string {
    return this.cookies
      .filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`) || c.path === '/')
      .map((c) => `${c.name}=${c.value}`)
      .join('; ');
  }

  private store(url: URL, headers: Headers) {
    for (const line of headers.getSetCookie()) {
      this.setCookies.push(line);
      const [pair, ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const pathAttr = attributes.find((a) => a.toLowerCase().startsWith('path='));
      const cookiePath = pathAttr ? pathAttr.slice(5) : url.pathname.replace(/\/[^/]*$/, '') || '/';
      const expired = attributes.some((a) => /^expires=thu, 01 jan 1970/i.test(a)) || value === '';
      this.cookies = this.cookies.filter((c) => !(c.name === name && c.path === cookiePath));
      if (!expired) this.cookies.push({ name, value, path: cookiePath });
    }
  }

  /** One request, no redirect following. */
  async request(target: string, init: { method?: string; form?: Record<string, string | string[]>; headers?: Record<string, string> } = {}): Promise<Step> {
    const url = new URL(target, this.baseUrl);
    const proxied = this.proxy && url.origin === new URL(this.baseUrl).origin;
    const headers: Record<string, string> = { accept: 'text/html', ...(proxied ? this.proxy!.headers : {}), ...init.headers };
    const cookie = this.cookieHeader(url);
    if (cookie) headers.cookie = cookie;
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      // A list is a repeated field (checkboxes sharing a name).
      body = new URLSearchParams(Object.entries(init.form).flatMap(([name, value]) => [value].flat().map((v): [string, string] => [name, v]))).toString();
    }
    const res = await fetch(proxied ? new URL(`${url.pathname}${url.search}`, this.proxy!.origin) : url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    this.store(url, res.headers);
    const location = res.headers.get('location') ?? undefined;
    return { status: res.status, location: location && this.onThisInstance(new URL(location, url).toString()), body: await res.text(), headers: res.headers };
  }

  /** A redirect to the public origin this browser's instance answers as, taken to the instance itself. */
  private onThisInstance(location: string): string {
    const own = new URL(this.baseUrl).origin;
    const publicOrigin = answersAs.get(own);
    return publicOrigin && publicOrigin !== own && location.startsWith(`${publicOrigin}/`) ? `${own}${location.slice(publicOrigin.length)}` : location;
  }

  /** Follows redirects within the service; stops at the first page or at a redirect leaving it. */
  async follow(target: string): Promise<Step & { url: string }> {
    let url = new URL(target, this.baseUrl).toString();
    for (let hop = 0; hop < 10; hop += 1) {
      const step = await this.request(url);
      if (!step.location || !step.location.startsWith(this.baseUrl)) return { ...step, url };
      url = step.location;
    }
    throw new Error('too many redirects');
  }

  /** Submits the form on `page` whose action ends with `action`, with the page's CSRF token. */
  async submit(page: { url: string; body: string }, action: string, fields: Record<string, string> = {}) {
    const forms = [...page.body.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)];
    const form = forms.find((match) => match[1]!.endsWith(action));
    if (!form) throw new Error(`no form posting to ${action} on ${page.url}:\n${page.body}`);
    const csrf = /name="_csrf" value="([^"]*)"/.exec(form[2]!)?.[1] ?? '';
    const step = await this.request(new URL(form[1]!, page.url).toString(), { form: { _csrf: csrf, ...fields } });
    if (step.location?.startsWith(this.baseUrl)) return this.follow(step.location);
    return { ...step, url: page.url };
  }

  /**
   * The whole browser part of the flow: authorize, log in (if needed), approve.
   * Returns the final redirect to the client (its URL holds `code` or `error`).
   */
  async authorize(client: TestClient, user: TestUser | undefined, params: Record<string, string> = {}, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
    const query = new URLSearchParams({ client_id: client.client_id, redirect_uri: client.redirect_uri, response_type: 'code', ...params });
    return this.authorizeAt(`/api/authorize.php?${query}`, user, decision);
  }

  /** {@link authorize} from an authorization URL a client library built. */
  async authorizeAt(url: string | URL, user: TestUser | undefined, decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
    let page = await this.follow(String(url));
    if (page.body.includes('action="/interaction/') && page.body.includes('/login"')) {
      if (!user) throw new Error('login page shown but no user given');
      page = await this.submit(page, '/login', { username: user.username, password: user.password });
    }
    if (page.body.includes('/confirm"')) {
      this.consentPage = page.body;
      page = await this.submit(page, decision === 'approve' ? '/confirm' : '/abort');
    }
    if (!page.location) throw new Error(`flow ended on a page (${page.status}) instead of a redirect:\n${page.body.slice(0, 2000)}`);
    return new URL(page.location);
  }
}

/** Authorizes and returns the code (throws if the redirect carries none). */
export async function obtainCode(baseUrl: string, client: TestClient, user: TestUser, params: Record<string, string> = {}): Promise<string> {
  const redirect = await new Browser(baseUrl).authorize(client, user, params);
  const code = redirect.searchParams.get('code');
  if (!code) throw new Error(`no code in ${redirect}`);
  return code;
}

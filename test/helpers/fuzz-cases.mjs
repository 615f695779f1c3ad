/**
 * Malformed requests for every path, from a seeded generator, and a raw-socket sender that
 * can put any bytes on the wire. Shared by `npm run fuzz` (scripts/fuzz.mjs, tens of thousands
 * of cases against `node dist/launch.cjs`) and the fixed corpus in `npm test`
 * (test/http/fuzz-corpus.test.ts, a few hundred against the in-process app).
 *
 * The contract: every bad input gets a clear 4xx (the spec's JSON on API
 * paths, a readable page in the browser), never a 5xx, a hang or internals in the body.
 *
 * @example for (const c of generateCases({ seed: 1, count: 300, context })) check(await sendCase(baseUrl, c));
 */
import net from 'node:net';

/** mulberry32: a small seeded PRNG, so a seed names a corpus exactly. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
}

const b64 = (text) => Buffer.from(text, 'latin1').toString('base64');

/** Values that are wrong in every way a parser can trip on; `huge` ones are generated. */
const BAD_VALUES = [
  '', '%', '%Z', '%ZZ', '%E0%A4%A', '%%41', '%C3%28', '%FF%FE', '%ED%A0%80', '%C0%AF', '%F4%90%80%80', '%00', 'a%00b',
  '%0d%0aSet-Cookie:%20x=1', '%E2%80%AE', '%F0%9F%98%80', 'null', 'undefined', '[object Object]', 'true', '-1', '1e309', 'NaN',
  '0x10', '__proto__', 'constructor', 'prototype', '../../etc/passwd', '..%2F..%2F', 'javascript:alert(1)', '<script>x</script>',
  '"quoted"', "'single", '\\', '%5C', 'a+b', '+++', '=', '&', '%26', '%3D', ' ', '%20%20', 'http://', 'https://evil.example/cb',
  'http://localhost:9999/callback#frag', 'http://user:pw@localhost:9999/callback', 'S256', 'plain', 'code token', 'none',
];

const FIELD_NAMES = [
  'code', 'client_id', 'client_secret', 'grant_type', 'redirect_uri', 'refresh_token', 'code_verifier', 'token', 'token_type_hint',
  'response_type', 'state', 'scope', 'code_challenge', 'code_challenge_method', 'nonce', 'prompt', 'request', 'request_uri',
  'username', 'password', '_csrf', 'action', 'id', 'limit', 'url', 'events', 'client_name', 'access_token',
  '__proto__', '__proto__[admin]', 'constructor[prototype][admin]', 'a[b][c][d]', 'x[]', '[]', '=',
];

function huge(r) {
  return r.pick(['a', '%41', '%', '\u00e9', '%00']).repeat(r.pick([1_000, 10_000, 20_000, 70_000]));
}

function value(r, context) {
  const roll = r.next();
  if (roll < 0.05) return huge(r);
  if (roll < 0.2 && context.client) return r.pick([context.client.client_id, context.client.client_secret, context.client.redirect_uri, encodeURIComponent(context.client.redirect_uri)]);
  if (roll < 0.3) return r.pick(BAD_VALUES) + r.pick(BAD_VALUES);
  return r.pick(BAD_VALUES);
}

/** A form body or query string: valid-looking fields mixed with broken, repeated and huge ones. */
function fields(r, context, base = {}) {
  const pairs = Object.entries(base).map(([k, v]) => `${k}=${encodeURIComponent(v)}`);
  const n = r.chance(0.03) ? 2000 + r.int(3000) : r.int(6);
  for (let i = 0; i < n; i += 1) pairs.push(`${r.chance(0.8) ? r.pick(FIELD_NAMES) : r.pick(BAD_VALUES)}=${value(r, context)}`);
  if (r.chance(0.2) && pairs.length) pairs.push(pairs[r.int(pairs.length)]); // a repeated field
  if (r.chance(0.1)) pairs.push(r.pick(['&&&', '=', '==', 'novalue', '%', '&=&']));
  return pairs.join('&');
}

function nested(depth, leaf) {
  return `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;
}

/** JSON bodies: broken, wrong-shaped, deeply nested, prototype-polluting, huge. */
function jsonBody(r, context) {
  return r.pick([
    () => '{"client_name":',
    () => '{',
    () => '',
    () => 'null',
    () => '"a string"',
    () => '42',
    () => '[]',
    () => '\ufeff{"client_name":"x","redirect_uri":"http://localhost:9999/cb"}',
    () => '{"__proto__":{"admin":true,"client_id":"x"},"client_name":"x","redirect_uri":"http://localhost:9999/cb"}',
    () => '{"constructor":{"prototype":{"admin":true}},"url":"http://127.0.0.1/","events":["token.issued"]}',
    () => `{"url":${JSON.stringify(value(r, context))},"events":${r.pick(['"token.issued"', '[1,2]', '{}', 'null', '[["x"]]', '["__proto__"]'])}}`,
    () => `{"client_name":${r.pick(['null', '1', '[]', '{}', '"x"', JSON.stringify('x'.repeat(101)), '"\\u0000"', '"\\ud800"'])},"redirect_uri":${r.pick(['null', '[]', '"http://localhost:9999/cb"', JSON.stringify(value(r, context))])}}`,
    () => `{"a":${nested(r.pick([100, 1000, 5000]), '1')}}`,
    () => nested(r.pick([100, 1000, 5000]), '{}'),
    () => `{"a":${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}`,
    () => JSON.stringify({ client_name: huge(r), redirect_uri: 'http://localhost:9999/cb' }),
    () => '{"a":1,"a":2,"__proto__":[],"__proto__":null}',
    () => '{"client_name":"x" "redirect_uri":"y"}',
    () => "{'single':'quotes'}",
    () => '{"n":1e999999,"m":-0,"o":0.0000000000000000000000001}',
    () => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  ])();
}

const CONTENT_TYPES = [
  'application/x-www-form-urlencoded', 'application/json', 'text/plain', 'application/xml', 'multipart/form-data',
  'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/json; charset=klingon',
  'application/x-www-form-urlencoded; charset=latin1', 'application/x-www-form-urlencoded; charset=utf-7', ';;;', '*/*',
  'application/', 'application/json, text/html', 'application/merge-patch+json', 'application/x-www-form-urlencoded\u00e9',
];

function authorization(r, context) {
  const id = context.client?.client_id ?? 'client';
  return r.pick([
    'Basic', 'Basic ', 'Basic ====', 'Basic !!!', `Basic ${b64(':')}`, `Basic ${b64('a:b:c')}`, `Basic ${b64(`${id}:`)}`,
    `Basic ${b64(`${id}:%ZZ`)}`, `Basic ${b64('%E0%A4%A:%00')}`, `Basic ${b64('\u00ff\u00fe:\u00ff')}`, `Basic ${b64(`${id}:${'x'.repeat(5000)}`)}`,
    `basic ${b64(`${id}:x`)}`, `BASIC  ${b64(`${id}:x`)}`, 'Bearer', 'Bearer ', 'Bearer  a b', `Bearer ${'a'.repeat(6000)}`, 'Bearer %00',
    'bearer abc', 'Bearer ====', 'Bearer a,Bearer b', 'Digest username="x"', 'DPoP abc', 'Negotiate YII=', '\u00e9\u00e9', 'x'.repeat(7000),
  ]);
}

function cookie(r, context) {
  const names = ['_session', '_session.sig', '_session.legacy', '_interaction', '_interaction.sig', '_interaction_resume', 'settings_session', 'applications_session', '_csrf', 'csrf', 'csrf.sig', 'login_device', 'login_device.sig'];
  const jar = Array.from({ length: 1 + r.int(4) }, () => `${r.pick(names)}=${r.pick(['', 'x', '%', '%ZZ', 'a'.repeat(3000), '"unterminated', 'a=b=c', ';;', b64('{"__proto__":{}}')])}`);
  if (context.interaction && r.chance(0.5)) jar.push(context.interaction.cookie);
  return jar.join(r.pick(['; ', ';', ';;', ',']));
}

/**
 * `_csrf` values for a form whose browser holds the token `token`: the token itself, and every
 * near miss a comparison can trip on (as many characters but more bytes, one character off,
 * longer, shorter, another issue time, NUL bytes, huge).
 */
function csrfValue(r, token) {
  return r.pick([
    () => token,
    () => '\u00e9'.repeat(token.length),
    () => `${token.slice(0, -1)}\u00e9`,
    () => `\u00e9${token.slice(1)}`,
    () => '\u20ac'.repeat(token.length),
    () => '\u{1f600}'.repeat(Math.ceil(token.length / 2)),
    () => token.slice(0, -1),
    () => `${token}x`,
    () => token.toUpperCase(),
    () => token.replace(/\.\d+$/, '.0'),
    () => token.replace(/\.\d+$/, '.99999999999999999999'),
    () => token.replace(/\.\d+$/, ''),
    () => '\u0000'.repeat(token.length),
    () => '',
    () => huge(r),
  ])();
}

/**
 * A post to a form that checks `_csrf`, from a browser that holds a token (`context.csrf`: its
 * cookie and token) and, on the interaction's forms, the interaction's cookie: the form's fields
 * with a `_csrf` from {@link csrfValue}, sometimes twice.
 */
function csrfCase(r, context, t, index) {
  const token = context.csrf.token;
  const pairs = [`_csrf=${encodeURIComponent(csrfValue(r, token))}`];
  if (r.chance(0.1)) pairs.push(`_csrf=${encodeURIComponent(r.chance(0.5) ? token : csrfValue(r, token))}`);
  if (t.actions) pairs.push(`action=${r.pick(t.actions)}`);
  for (const name of ['username', 'password', 'client_id', 'client_secret', 'client_name', 'redirect_uri']) if (r.chance(0.5)) pairs.push(`${name}=${encodeURIComponent(value(r, context))}`);
  const cookies = [context.csrf.cookie, ...(context.interaction && t.path.startsWith('/interaction/') ? [context.interaction.cookie] : [])];
  const query = t.path === '/api/settings.php' ? `?action=${r.pick(t.actions)}` : '';
  return {
    name: `#${index} POST ${t.path} (csrf)`,
    method: 'POST',
    target: `${t.path}${query}`,
    headers: [['Accept', 'text/html'], ['Cookie', cookies.join('; ')], ['Content-Type', 'application/x-www-form-urlencoded']],
    body: r.chance(0.5) ? pairs.reverse().join('&') : pairs.join('&'),
  };
}

/** One path per route the service serves (and a few it does not), with how a request there looks. */
function targets(context) {
  const uid = context.interaction?.uid ?? 'no-such-interaction';
  const ep = context.webhookId ?? 'ep_missing';
  return [
    { method: 'GET', path: '/api/authorize.php', query: true, page: true },
    { method: 'POST', path: '/api/authorize.php', form: true, page: true },
    { method: 'POST', path: '/api/token.php', form: true },
    { method: 'GET', path: '/api/token.php' },
    { method: 'GET', path: '/api/userinfo.php', auth: true },
    { method: 'POST', path: '/api/userinfo.php', form: true, auth: true },
    { method: 'POST', path: '/api/revoke.php', form: true, auth: true },
    { method: 'POST', path: '/api/introspect.php', form: true, auth: true },
    { method: 'GET', path: '/api/register.php', page: true },
    { method: 'POST', path: '/api/register.php', form: true, json: true, page: true, csrf: true },
    { method: 'GET', path: '/api/applications.php', page: true },
    { method: 'POST', path: '/api/applications.php', form: true, page: true, csrf: true },
    { method: 'GET', path: '/api/settings.php', query: true, page: true },
    { method: 'POST', path: '/api/settings.php', query: true, form: true, page: true, csrf: true, actions: ['sign_in', 'sign_out', 'update_client', 'rotate_secret', 'add_webhook', 'test_webhook', 'enable_webhook', 'disable_webhook', 'delete_webhook'] },
    { method: 'GET', path: '/api/webhooks.php', query: true, auth: true },
    { method: 'POST', path: '/api/webhooks.php', query: true, json: true, auth: true, actions: ['test', 'enable', 'disable', 'deliveries'] },
    { method: 'DELETE', path: '/api/webhooks.php', query: true, auth: true },
    { method: 'GET', path: `/interaction/${uid}`, page: true },
    { method: 'POST', path: `/interaction/${uid}/login`, form: true, page: true, csrf: true },
    { method: 'POST', path: `/interaction/${uid}/confirm`, form: true, page: true, csrf: true },
    { method: 'POST', path: `/interaction/${uid}/abort`, form: true, page: true, csrf: true },
    { method: 'GET', path: '/healthz' },
    { method: 'GET', path: '/healthz/live' },
    { method: 'GET', path: '/healthz/ready' },
    { method: 'GET', path: '/.well-known/oauth-authorization-server' },
    { method: 'GET', path: '/.well-known/openid-configuration' },
    { method: 'GET', path: '/api/jwks.php' },
    { method: 'GET', path: '/assets/site.css' },
    { method: 'GET', path: '/no/such/page' },
  ].map((t) => ({ ...t, ep }));
}

const PATH_MANGLES = [
  (p) => p, (p) => p, (p) => p, (p) => p, (p) => p, (p) => p,
  (p) => p.toUpperCase(), (p) => `${p}/`, (p) => `/${p}`, (p) => p.replace('.php', '%2Ephp'), (p) => p.replace('/api/', '/api/../api/'),
  (p) => p.replace('/api/', '/api/%2e%2e/api/'), (p) => `${p}%00`, (p) => `${p};jsessionid=x`, (p) => p.replace(/\//g, '\\'),
  (p) => `${p}/%E0%A4%A`, (p) => `${p}/%ZZ`, (p) => `${p}/${'a'.repeat(6000)}`, (p) => `${p}#frag`, (p) => `//evil.example${p}`,
  (p) => `http://localhost${p}`, () => '*',
];

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND', 'CONNECT'];

/** A query for a target: the real client's parameters, broken ones, or a mix. */
function query(r, context, target) {
  const base = {};
  if (target.path === '/api/authorize.php' && context.client && r.chance(0.6)) {
    Object.assign(base, { client_id: context.client.client_id, response_type: 'code' });
    if (r.chance(0.6)) base.redirect_uri = context.client.redirect_uri;
  }
  if (target.actions && r.chance(0.8)) base.action = r.pick(target.actions);
  if (target.path.endsWith('webhooks.php') || target.path.endsWith('settings.php')) if (r.chance(0.5)) base.id = r.chance(0.5) ? target.ep : value(r, context);
  return fields(r, context, base);
}

/**
 * One case: `{ name, method, target, headers: [[name, value]…], body }` (the sender adds Host,
 * Connection: close and Content-Length unless the case sets them), or `{ name, raw }` for bytes
 * no well-formed request could carry.
 */
function generateOne(r, context, index) {
  const all = targets(context);
  if (r.chance(0.04)) return rawCase(r, context, index);
  const t = r.pick(all);
  if (context.csrf && t.csrf && r.chance(0.4)) return csrfCase(r, context, t, index);
  const method = r.chance(0.1) ? r.pick(METHODS) : t.method;
  let target = r.pick(PATH_MANGLES)(t.path);
  if (t.query || r.chance(0.2)) target += `?${query(r, context, t)}`;
  const headers = [];
  const traits = [];
  if (t.page || r.chance(0.3)) headers.push(['Accept', r.pick(['text/html', 'application/json', '*/*', 'text/html;q=x', 'application/json;q=0.1, text/html', '', 'image/png', 'text/*'])]);
  if (t.auth || r.chance(0.25)) {
    headers.push(['Authorization', authorization(r, context)]);
    if (r.chance(0.1)) headers.push(['Authorization', authorization(r, context)]);
    traits.push('auth');
  }
  if (t.page || r.chance(0.2)) headers.push(['Cookie', cookie(r, context)]);
  if (r.chance(0.1)) headers.push(...Array.from({ length: r.pick([5, 50, 90]) }, (_, i) => [r.pick(['X-Junk', `X-Junk-${i}`, 'Accept', 'Content-Type', 'Cookie']), value(r, context).slice(0, 200)]));
  if (r.chance(0.05)) headers.push(['X-Forwarded-For', r.pick(['::ffff:1.2.3.4', 'garbage', '1.2.3.4, ' + 'x,'.repeat(500), '[::1]:99', '999.999.1.1'])]);
  if (r.chance(0.03)) headers.push(['Content-Encoding', r.pick(['gzip', 'deflate', 'br', 'identity', 'x-unknown', 'gzip, gzip'])]);
  if (r.chance(0.03)) headers.push(['Expect', '100-continue']);

  let body;
  if (method !== 'GET' && method !== 'HEAD' && (t.form || t.json || r.chance(0.3))) {
    const asJson = t.json && r.chance(0.6);
    body = asJson ? jsonBody(r, context) : fields(r, context, t.actions && r.chance(0.7) ? { action: r.pick(t.actions) } : {});
    let type = asJson ? 'application/json' : 'application/x-www-form-urlencoded';
    if (r.chance(0.25)) type = r.pick(CONTENT_TYPES);
    if (r.chance(0.05)) body = r.pick(['\u0000\u0000\u0000', Buffer.from([0xff, 0xfe, 0x00, 0x41]), '--x\r\nContent-Disposition: form-data; name="code"\r\n\r\nx\r\n--x--', '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>']);
    if (!r.chance(0.05)) headers.push(['Content-Type', type]);
    traits.push(asJson ? 'json' : 'form');
  }
  return { name: `#${index} ${method} ${t.path}${traits.length ? ` (${traits.join(', ')})` : ''}`, method, target, headers, body };
}

/** Bytes no well-formed client would send: the HTTP parser's own paths. */
function rawCase(r, context, index) {
  const path = r.pick(targets(context)).path;
  const raw = r.pick([
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\nConnection: close\r\n\r\n`,
    () => `GET ${path}\u0000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.1\r\nConnection: close\r\n\r\n`, // no Host
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\nHost: y\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.0\r\n\r\n`,
    () => `GET ${path} HTTP/9.9\r\nHost: x\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.1\nHost: x\nConnection: close\n\n`,
    () => `get ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\nBad Header: y\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\n X-Folded: y\r\nConnection: close\r\n\r\n`,
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`,
    () => `GET ${path}?${'a=b&'.repeat(3000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 7\r\nConnection: close\r\n\r\nabcde`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\nConnection: close\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabcdefgh`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\nConnection: close\r\n\r\n4\r\nabcd\r\n0\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n{\r\n0\r\n\r\n`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot-gzip!!`,
    () => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Encoding: deflate\r\nContent-Length: 4\r\nConnection: close\r\n\r\n\u0000\u0001\u0002\u0003`,
    () => `\u0016\u0003\u0001\u0000\u00a5\u0001\u0000\u0000\u00a1\u0003\u0003`, // a TLS ClientHello on the plain port
    () => 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    () => `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`,
    () => '\r\n\r\n\r\n',
    () => `${'A'.repeat(10_000)} ${path} HTTP/1.1\r\n\r\n`,
  ])();
  return { name: `#${index} raw ${JSON.stringify(raw.replace(path, '<path>').slice(0, 70))}`, raw: Buffer.from(raw, 'latin1') };
}

/**
 * `count` cases from `seed`. `context` makes them reach deeper: `client` (a registered
 * client), `interaction` (`{uid, cookie}` of a pending login), `webhookId`, `csrf` (a browser's
 * anti-forgery `{cookie, token}`, from {@link csrfContext}: every form's `_csrf` is fuzzed with it).
 */
export function* generateCases({ seed, count, context = {} }) {
  const r = rng(seed);
  for (let i = 0; i < count; i += 1) yield generateOne(r, context, i);
}

/** A browser's anti-forgery cookie and token, as the registration page gives them (the cookie serves every form). */
export async function csrfContext(baseUrl) {
  const res = await fetch(`${baseUrl}/api/register.php`, { headers: { accept: 'text/html' } });
  const token = /name="_csrf" value="([^"]*)"/.exec(await res.text())?.[1];
  const cookie = res.headers.getSetCookie().map((line) => line.split(';')[0]).join('; ');
  if (!token || !cookie) throw new Error(`no anti-forgery token from ${baseUrl}/api/register.php (status ${res.status})`);
  return { token, cookie };
}

/**
 * Slow, partial requests (raw sockets): each is sent in pieces with pauses, or left unfinished.
 * A bounded server answers (408/400) or closes them; `stallMs` is how long the sender keeps a
 * connection open without finishing the request before giving up.
 */
export function slowCases(path = '/api/token.php') {
  return [
    { name: 'headers never finished', pieces: [`POST ${path} HTTP/1.1\r\nHost: x\r\n`], stall: true },
    { name: 'request line never finished', pieces: [`GET ${path}`], stall: true },
    { name: 'body shorter than Content-Length', pieces: [`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ncode=x`], stall: true },
    { name: 'chunked body never ended', pieces: [`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n`], stall: true },
    { name: 'headers a byte at a time', pieces: [...`GET /healthz/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`], gapMs: 20 },
    { name: 'idle keep-alive after one request', pieces: ['GET /healthz/live HTTP/1.1\r\nHost: x\r\n\r\n'], stall: true },
  ];
}

function parseResponse(bytes) {
  // An interim answer (100 Continue) comes before the real one.
  const interim = /^HTTP\/\d\.\d 1\d\d[^\r]*\r\n(?:[^\r]+\r\n)*\r\n/.exec(bytes.toString('latin1'));
  if (interim && bytes.length > interim[0].length) return parseResponse(bytes.subarray(interim[0].length));
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (!text.startsWith('HTTP/')) return { status: 0, headers: {}, body: text };
  const head = end === -1 ? text : text.slice(0, end);
  const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(head)?.[1] ?? 0);
  const headers = {};
  for (const line of head.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = end === -1 ? Buffer.alloc(0) : bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts = [];
    let rest = body;
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd === -1) break;
      const size = parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16);
      if (!size) break;
      parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
      rest = rest.subarray(lineEnd + 4 + size);
    }
    body = Buffer.concat(parts);
  }
  return { status, headers, body: body.toString('utf8') };
}

/** The request's bytes: what the case says, plus Host, Connection: close and Content-Length unless it set them. */
export function requestBytes(c, host) {
  if (c.raw) return c.raw;
  const body = c.body === undefined ? undefined : Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body, 'utf8');
  const names = new Set(c.headers.map(([name]) => name.toLowerCase()));
  const lines = [`${c.method} ${c.target} HTTP/1.1`, `Host: ${host}`, 'Connection: close'];
  for (const [name, v] of c.headers) lines.push(`${name}: ${Buffer.from(v, 'utf8').toString('latin1')}`);
  if (body && !names.has('content-length') && !names.has('transfer-encoding')) lines.push(`Content-Length: ${body.length}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body ?? Buffer.alloc(0)]);
}

/**
 * Sends one case over a fresh TCP connection and reads until the server closes it.
 * Resolves `{status, headers, body, ms, timedOut}`; status 0 means no HTTP answer (the
 * connection was closed or reset first), which a parser may rightly do with garbage.
 */
export function sendCase(baseUrl, c, { timeoutMs = 15_000 } = {}) {
  const url = new URL(baseUrl);
  const bytes = requestBytes(c, url.host);
  return new Promise((resolve) => {
    const started = performance.now();
    const chunks = [];
    let timedOut = false;
    const socket = net.connect({ host: url.hostname, port: Number(url.port) });
    const timer = setTimeout(() => { timedOut = true; socket.destroy(); }, timeoutMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {}); // a reset is an answer too: read what came before it
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ ...parseResponse(Buffer.concat(chunks)), ms: performance.now() - started, timedOut });
    });
    socket.on('connect', () => {
      socket.write(bytes); // not end(): a half-closed connection makes the server drop the request unread
    });
  });
}

/**
 * Sends a slow case and measures how long the server keeps the connection open. Resolves
 * `{status, ms, closedByServer}`; a server with bounded timeouts closes a stalled connection.
 */
export function sendSlowCase(baseUrl, c, { giveUpMs = 120_000 } = {}) {
  const url = new URL(baseUrl);
  return new Promise((resolve) => {
    const started = performance.now();
    const chunks = [];
    let closedByServer = true;
    const socket = net.connect({ host: url.hostname, port: Number(url.port) });
    const timer = setTimeout(() => { closedByServer = false; socket.destroy(); }, giveUpMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const response = parseResponse(Buffer.concat(chunks));
      resolve({ status: response.status, body: response.body, ms: performance.now() - started, closedByServer });
    });
    socket.on('connect', async () => {
      for (const piece of c.pieces) {
        if (socket.destroyed) return;
        socket.write(Buffer.from(piece, 'latin1'));
        if (c.gapMs) await new Promise((r) => setTimeout(r, c.gapMs));
      }
    });
  });
}

/** What must never be in a body: stack frames, error class names, file paths, SQL, Prisma, the provider's default page. */
const LEAKS = [
  /\bat [\w$.<>[\] ]+ \([^)]*\)/, /\bat (?:file:\/\/|\/|node:)\S+:\d+:\d+/, /\b\w*Error: /, /\boops\b/i, /node_modules/, /\/(?:work|home|root|usr|src|dist|tmp)\/[\w.-]+\//,
  /\.(?:ts|js|mjs):\d+/, /\bprisma\b/i, /\bSQLSTATE\b/, /syntax error at or near/i, /\brelation "\w+"/, /duplicate key value/i,
  /\b(?:SELECT|INSERT|UPDATE|DELETE)\b[\s\S]{0,80}\b(?:FROM|INTO|SET|WHERE)\b/, /ECONNREFUSED|ETIMEDOUT|ECONNRESET/, /\binvalid input syntax\b/i,
];

/**
 * The problems of one answer: a 5xx, a hang, internals in the body. A marker the request
 * itself carried (echoed input, say a path named in a 404) does not count as a leak.
 */
export function problemsOf(c, response, baseUrl = 'http://localhost') {
  const problems = [];
  if (response.timedOut) problems.push('no answer (hang)');
  if (response.status >= 500) problems.push(`status ${response.status}`);
  const sent = requestBytes(c, new URL(baseUrl).host).toString('latin1');
  const sentDecoded = (() => { try { return decodeURIComponent(sent); } catch { return sent; } })();
  for (const pattern of LEAKS) {
    const match = pattern.exec(response.body ?? '');
    if (match && !sent.includes(match[0]) && !sentDecoded.includes(match[0])) problems.push(`body leaks ${JSON.stringify(match[0])}`);
  }
  return problems;
}

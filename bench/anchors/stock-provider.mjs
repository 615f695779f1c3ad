/**
 * Anchor P: stock oidc-provider 9 with a plain `Map` adapter (not the provider's built-in
 * memory adapter, an LRU of 1,000 entries that evicts tokens under load), one confidential
 * client, an account with this service's userinfo claims, rotating refresh tokens and RS256
 * ID tokens. What the rows of this service are compared with.
 *
 * A harness route, `POST /bench/mint?kind=code|access|refresh&n=…`, saves fresh codes or tokens
 * through the provider's own models (each under its own grant, as a consent would leave them)
 * and answers their values; it is not measured.
 *
 * Usage: PORT=… node bench/anchors/stock-provider.mjs
 */
import http from 'node:http';
import Provider from 'oidc-provider';
import { CLIENT } from '../lib/anchor-client.mjs';

const PORT = Number(process.env.PORT);
const ISSUER = `http://127.0.0.1:${PORT}`;
const ACCOUNT = 'bench-user';

const store = new Map();
const grants = new Map();

/** The seven calls of the adapter contract on a Map that keeps everything (expiry is checked by the provider). */
class MapAdapter {
  constructor(name) {
    this.name = name;
  }

  key(id) {
    return `${this.name}:${id}`;
  }

  async upsert(id, payload) {
    store.set(this.key(id), payload);
    if (payload.grantId) {
      const ids = grants.get(payload.grantId) ?? new Set();
      ids.add(this.key(id));
      grants.set(payload.grantId, ids);
    }
    if (payload.uid) store.set(`uid:${payload.uid}`, id);
    if (payload.userCode) store.set(`userCode:${payload.userCode}`, id);
  }

  async find(id) {
    return store.get(this.key(id));
  }

  async findByUid(uid) {
    const id = store.get(`uid:${uid}`);
    return id && this.find(id);
  }

  async findByUserCode(userCode) {
    const id = store.get(`userCode:${userCode}`);
    return id && this.find(id);
  }

  async consume(id) {
    const payload = store.get(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    store.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const key of grants.get(grantId) ?? []) store.delete(key);
    grants.delete(grantId);
  }
}

const provider = new Provider(ISSUER, {
  adapter: MapAdapter,
  clients: [{ ...CLIENT, redirect_uris: [CLIENT.redirect_uri], redirect_uri: undefined, grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'client_secret_post' }],
  claims: { openid: ['sub', 'username', 'email', 'full_name'] },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, username: 'bench', email: 'bench@example.com', full_name: 'Bench User' }) }),
  issueRefreshToken: () => true,
  rotateRefreshToken: true,
  pkce: { required: () => false },
  ttl: { AccessToken: 3600, AuthorizationCode: 600, RefreshToken: 14 * 86_400, IdToken: 3600, Grant: 15 * 86_400, Session: 14 * 86_400, Interaction: 3600 },
  cookies: { keys: ['bench-cookie-key-bench-cookie-key-0123456789'] },
  features: { devInteractions: { enabled: false }, userinfo: { enabled: true } },
});

async function mint(kind) {
  const grant = new provider.Grant({ accountId: ACCOUNT, clientId: CLIENT.client_id });
  grant.addOIDCScope('openid');
  const grantId = await grant.save();
  const common = { accountId: ACCOUNT, clientId: CLIENT.client_id, grantId, scope: 'openid' };
  if (kind === 'code') return new provider.AuthorizationCode({ ...common, redirectUri: CLIENT.redirect_uri, authTime: Math.floor(Date.now() / 1000) }).save();
  if (kind === 'access') return new provider.AccessToken({ ...common, gty: 'authorization_code' }).save();
  if (kind === 'refresh') return new provider.RefreshToken({ ...common, gty: 'authorization_code', authTime: Math.floor(Date.now() / 1000) }).save();
  throw new Error(`unknown kind ${kind}`);
}

const callback = provider.callback();
http.createServer(async (req, res) => {
  if (req.method === 'POST' && req.url.startsWith('/bench/mint')) {
    const query = new URL(req.url, ISSUER).searchParams;
    const values = [];
    for (let i = 0; i < Number(query.get('n') ?? 1); i += 1) values.push(await mint(query.get('kind')));
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(values));
    return;
  }
  callback(req, res);
}).listen(PORT, '127.0.0.1');

// Stop on SIGTERM by exiting normally: Node writes a --cpu-prof profile only at a normal exit.
process.once('SIGTERM', () => process.exit(0));

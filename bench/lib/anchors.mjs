/**
 * The anchors, each in its own process: bare Koa (the ceiling of any Koa service here) and the
 * stock oidc-provider with a `Map` adapter (P). See bench/anchors/. `nodeArgs` go before the
 * script (the bench's --cpu-prof profiles the anchors too).
 */
import { CLIENT } from './anchor-client.mjs';
import { freePort, startServer } from './processes.mjs';

export async function startBareKoa({ logDir, nodeArgs = [] }) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startServer('bare-koa', [...nodeArgs, 'bench/anchors/bare-koa.mjs'], { PORT: String(port), NODE_ENV: 'production' }, `${base}/`, { logDir });
  return { base, server, close: server.stop };
}

export async function startStockProvider({ logDir, nodeArgs = [] }) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = await startServer('stock-provider', [...nodeArgs, 'bench/anchors/stock-provider.mjs'], { PORT: String(port) }, `${base}/.well-known/openid-configuration`, { logDir });
  /** Fresh codes or tokens through the provider's own models (the anchor's harness route). */
  async function mint(kind, n) {
    const values = [];
    while (values.length < n) {
      const res = await fetch(`${base}/bench/mint?kind=${kind}&n=${Math.min(2000, n - values.length)}`, { method: 'POST' });
      values.push(...(await res.json()));
    }
    return values;
  }
  const [accessToken] = await mint('access', 1);
  return {
    base,
    server,
    client: CLIENT,
    accessToken,
    mint,
    codeBody: (code) => new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CLIENT.redirect_uri, client_id: CLIENT.client_id, client_secret: CLIENT.client_secret }).toString(),
    refreshBody: (token) => new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: CLIENT.client_id, client_secret: CLIENT.client_secret }).toString(),
    close: server.stop,
  };
}

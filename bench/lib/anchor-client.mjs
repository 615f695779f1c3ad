/** The one client of the stock-provider anchor (bench/anchors/stock-provider.mjs). */
export const CLIENT = { client_id: 'bench-client', client_secret: 'bench-secret-bench-secret-bench-secret-12', redirect_uri: 'http://127.0.0.1:9/callback' };

/**
 * `--seed-tokens N`: N live access tokens and N live refresh tokens stored,
 * each under its own grant, before the rows are measured: the figures must stay within 10 %
 * of the small-store ones.
 *
 * Minting millions through the service's own API would take hours, so the seed copies rows
 * the service itself wrote: one real access token, refresh token and grant, obtained through
 * a real flow, cloned with new ids in batches inside PostgreSQL. It knows the `oidc_models`
 * table (type, id, payload, grant_id, …); if the store layer changes its tables, this is the
 * file to update. In the embedded mode the database belongs to the running service: it is
 * stopped, seeded through the service's own `openDatabase` (dist/), and started again.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { ROOT } from './processes.mjs';

const BATCH = 50_000;

export async function seedTokens(service, n) {
  const codes = await service.mintCodes(1);
  const { access_token: accessToken, refresh_token: refreshToken } = await service.exchange(codes[0]);
  if (service.databaseUrl) {
    const db = new pg.Client({ connectionString: service.databaseUrl });
    await db.connect();
    try {
      await clone(db, n, accessToken, refreshToken);
    } finally {
      await db.end();
    }
    return;
  }
  await service.restartWith(async ({ dataDir }) => {
    const { openDatabase } = await import(pathToFileURL(path.join(service.root ?? ROOT, 'dist', 'store', 'database.js')).href);
    const db = await openDatabase({ databaseUrl: undefined, dataDir, timeouts: { databaseConnectMs: 60_000, databaseStatementMs: 600_000, databaseIdleInTransactionMs: 600_000 } });
    try {
      await db.withConnection((sql) => clone(sql, n, accessToken, refreshToken));
    } finally {
      await db.close();
    }
  });
}

/** Clones the rows of one access token, one refresh token and their grant `n` times; `db.query(text, params)`. */
async function clone(db, n, accessToken, refreshToken) {
  const { rows: columns } = await db.query("SELECT column_name FROM information_schema.columns WHERE table_name = 'oidc_models'");
  const known = new Set(['type', 'id', 'payload', 'grant_id', 'uid', 'user_code', 'expires_at', 'consumed_at']);
  if (columns.length === 0 || columns.some((c) => !known.has(c.column_name))) {
    throw new Error(`--seed-tokens: oidc_models is not the table bench/lib/seed-tokens.mjs knows (columns: ${columns.map((c) => c.column_name).join(', ') || 'none'})`);
  }
  const { rows } = await db.query("SELECT type, id, grant_id FROM oidc_models WHERE (type = 'AccessToken' AND id = $1) OR (type = 'RefreshToken' AND id = $2)", [accessToken, refreshToken]);
  if (rows.length !== 2) throw new Error('--seed-tokens: the tokens of a real exchange are not rows of oidc_models keyed by their value; update bench/lib/seed-tokens.mjs');
  const grantId = rows[0].grant_id;
  // One clone of a row per number g, with a new id (and its own grant, `seed-grant-<g>`).
  const copy = (type, sourceId, idExpression) => `
    INSERT INTO oidc_models (type, id, payload, grant_id, uid, user_code, expires_at, consumed_at)
    SELECT m.type, ${idExpression},
           jsonb_set(CASE WHEN m.payload ? 'jti' THEN jsonb_set(m.payload, '{jti}', to_jsonb(${idExpression})) ELSE m.payload END,
                     '{grantId}', to_jsonb('seed-grant-' || g)),
           'seed-grant-' || g, m.uid, m.user_code, m.expires_at, m.consumed_at
    FROM oidc_models m, generate_series($1::int, $2::int) AS g
    WHERE m.type = '${type}' AND m.id = '${sourceId.replace(/'/g, "''")}'`;
  const tokenId = (kind) => `translate(encode(sha256(('${kind}-' || g)::bytea), 'base64'), '+/=', '-_')`;
  for (let from = 1; from <= n; from += BATCH) {
    const to = Math.min(n, from + BATCH - 1);
    await db.query('BEGIN');
    await db.query(copy('Grant', grantId, "'seed-grant-' || g"), [from, to]);
    await db.query(copy('AccessToken', accessToken, tokenId('at')), [from, to]);
    await db.query(copy('RefreshToken', refreshToken, tokenId('rt')), [from, to]);
    await db.query('COMMIT');
  }
  // As a table that grew over time would be: visibility map set, statistics current (autovacuum would
  // otherwise run during the measured rows), and the seed's writes on disk (otherwise the
  // checkpointer flushes its gigabytes of dirty pages while the rows are measured).
  await db.query('VACUUM ANALYZE oidc_models');
  await db.query('CHECKPOINT').catch((error) => console.error(`[bench] seed: no CHECKPOINT (${error.message}); the first rows share the disk with it`));
}

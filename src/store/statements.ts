/**
 * The request path's SQL, each statement of one fixed text whatever it carries: the keys of a
 * read and the rows of a write travel as parameters (a JSON record set, or parallel arrays
 * through `unnest`), never as SQL assembled per call. So each is parsed once per connection (a
 * prepared statement on a direct connection, planned at each execution with its values:
 * store/database.ts), and its shape can be read here.
 *
 * Every read answers one row per key it found, tagged with the key's place `n`; every key of a
 * read is one lookup of one request (store/hot-reads.ts), and one statement may carry the
 * lookups of several requests.
 */

/** Keys as rows: `n` is a key's place in the statement. JSON, so any string arrives as sent. */
const KEYS = (columns: string) => `jsonb_to_recordset($1::jsonb) AS k(n int, ${columns})`;

/** A model row's payload with its times as epoch numbers (no time-zone parsing in the client). */
const MODEL = (alias: string, as = '') => `${alias}.payload AS ${as}payload, (extract(epoch from ${alias}.expires_at) * 1000)::float8 AS ${as}expires_ms, extract(epoch from ${alias}.consumed_at)::float8 AS ${as}consumed_s`;

const UUID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

/** Provider models by (type, id). */
export const FIND_MODELS = { name: 'find_models', text: `SELECT k.n, ${MODEL('m')} FROM ${KEYS('type text, id text')} JOIN oidc_models m ON m.type = k.type AND m.id = k.id` } as const;

/**
 * Tokens and codes by (type, id), each with what the provider asks for next: its grant, its
 * user, its client, and whether that client has an enabled webhook endpoint.
 */
export const FIND_TOKENS = { name: 'find_tokens', text: `
SELECT k.n, ${MODEL('m')}, ${MODEL('g', 'g_')},
  to_jsonb(u) AS "user", to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = c.client_id AND e.enabled) AS client_has_webhooks
FROM ${KEYS('type text, id text')}
JOIN oidc_models m ON m.type = k.type AND m.id = k.id
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = m.grant_id
LEFT JOIN LATERAL (SELECT * FROM users WHERE users.id = CASE WHEN m.payload->>'accountId' ~ '${UUID}' THEN (m.payload->>'accountId')::uuid END) u ON true
LEFT JOIN clients c ON c.client_id = m.payload->>'clientId'` } as const;

/**
 * Clients by id, each with what a login session of the request points at: its user, its grant
 * for that client (a silent authorization asks for them next) and its record of having signed
 * in to that client (oidc/session-end.ts: written again only when it would change).
 */
export const FIND_CLIENTS = { name: 'find_clients', text: `
SELECT k.n, to_jsonb(c) AS client,
  EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.client_id = k.client_id AND e.enabled) AS client_has_webhooks,
  (SELECT to_jsonb(u) FROM users u WHERE u.id = k.account_id) AS "user",
  ${MODEL('g', 'g_')}, ${MODEL('s', 's_')}
FROM ${KEYS('client_id text, account_id uuid, grant_id text, session_client_id text')}
LEFT JOIN clients c ON c.client_id = k.client_id
LEFT JOIN oidc_models g ON g.type = 'Grant' AND g.id = k.grant_id
LEFT JOIN oidc_models s ON s.type = 'SessionClient' AND s.id = k.session_client_id` } as const;

/** Users by id. */
export const FIND_USERS = { name: 'find_users', text: `SELECT k.n, to_jsonb(u) AS "user" FROM ${KEYS('id uuid')} JOIN users u ON u.id = k.id` } as const;

/**
 * The writes of one or more requests (each a "batch"), in one statement and so in one
 * transaction and one snapshot. Each batch's writes happen only if every one of its consumes
 * took: a code or refresh token is consumed only while unconsumed and unexpired, so of two
 * requests redeeming one code exactly one writes anything (RFC 6749 §4.1.2); a batch that lost
 * leaves no token, audit row or outbox message behind, and the others are not held back.
 *
 * | parameters   | what                                                                               |
 * |--------------|------------------------------------------------------------------------------------|
 * | $1           | how many batches                                                                   |
 * | $2–$4        | consumes: batch, model type, id                                                    |
 * | $5–$12       | provider models to upsert: batch, type, id, payload, grant_id, uid, user_code, expires_at |
 * | $13–$20      | audit rows: batch, event, actor, user_id, client_id, address, request_id, detail    |
 * | $21–$28      | webhook events: batch, event id, type, payload, client_id, account id, message ids, time |
 * | $29–$30      | self-registered clients' last use (clients/client-usage.ts): batch, client_id       |
 *
 * A webhook event becomes one outbox message per enabled endpoint of its client subscribed to
 * its type (none: nothing written), its payload naming the user by `username` (read here from
 * the account id, so whoever raises the event never waits for a lookup). Message ids come in
 * as a comma-separated list, one per possible endpoint.
 *
 * Answers one row: `took`, the consumes that took (their 1-based place in $2–$4); `announced`,
 * the events that got at least one message.
 */
export const WRITE = { name: 'write', text: `
WITH consumes AS (
  SELECT * FROM unnest($2::int[], $3::text[], $4::text[]) WITH ORDINALITY AS c(batch, type, id, n)
), took AS (
  UPDATE oidc_models m SET consumed_at = now() FROM consumes c
  WHERE m.type = c.type AND m.id = c.id AND m.consumed_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
  RETURNING c.n
), ok AS (
  SELECT b FROM generate_series(0, $1::int - 1) AS b
  WHERE NOT EXISTS (SELECT 1 FROM consumes c WHERE c.batch = b AND c.n NOT IN (SELECT n FROM took))
), models AS (
  INSERT INTO oidc_models (type, id, payload, grant_id, uid, user_code, expires_at)
  SELECT u.type, u.id, u.payload::jsonb, u.grant_id, u.uid, u.user_code, u.expires_at::timestamptz
  FROM unnest($5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
    AS u(batch, type, id, payload, grant_id, uid, user_code, expires_at)
  WHERE u.batch IN (SELECT b FROM ok)
  ON CONFLICT (type, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
    user_code = excluded.user_code, expires_at = excluded.expires_at
  RETURNING 1
), audit AS (
  INSERT INTO audit_events (event, actor, user_id, client_id, address, request_id, detail)
  SELECT a.event, a.actor, a.user_id, a.client_id, a.address, a.request_id, a.detail::jsonb
  FROM unnest($13::int[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[], $20::text[])
    AS a(batch, event, actor, user_id, client_id, address, request_id, detail)
  WHERE a.batch IN (SELECT b FROM ok)
  RETURNING 1
), messages AS (
  INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, next_attempt_at, created_at)
  SELECT COALESCE((string_to_array(o.ids, ','))[row_number() OVER (PARTITION BY o.n ORDER BY e.created_at, e.id)], 'msg_' || md5(random()::text || e.id)),
    e.id, o.event_id, o.type,
    CASE WHEN u.username IS NULL THEN o.payload::jsonb ELSE jsonb_set(o.payload::jsonb, '{data,username}', to_jsonb(u.username)) END,
    o.at::timestamptz, o.at::timestamptz
  FROM unnest($21::int[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[])
    WITH ORDINALITY AS o(batch, event_id, type, payload, client_id, account_id, ids, at, n)
  JOIN webhook_endpoints e ON e.client_id = o.client_id AND e.enabled AND o.type = ANY (e.events)
  LEFT JOIN users u ON u.id = CASE WHEN o.account_id ~ '${UUID}' THEN o.account_id::uuid END
  WHERE o.batch IN (SELECT b FROM ok)
  RETURNING event_id
), used AS (
  UPDATE clients c SET last_used_at = now()
  FROM unnest($29::int[], $30::text[]) AS u(batch, client_id)
  WHERE c.client_id = u.client_id AND u.batch IN (SELECT b FROM ok)
  RETURNING 1
)
SELECT ARRAY(SELECT n::int FROM took) AS took, ARRAY(SELECT DISTINCT event_id FROM messages) AS announced` } as const;

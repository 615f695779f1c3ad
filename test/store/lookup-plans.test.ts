/**
 * A lookup by (type, id) goes through the primary key whatever the statistics say (migration
 * 20261124000000_partial_lookup_indexes). With full (type, uid) and (type, user_code) indexes,
 * statistics gathered while codes were rare led the planner to read every code of the table
 * through one of them for each consume, and code exchanges on a store of a million tokens slowed
 * to a third. The lookups by uid and user code still have their indexes. A revocation of a
 * grant's tokens of one type reads one short range of the (grant_id, type) index (migration
 * 20261124100000_grant_type_index), never the primary key's range of every token of that type.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { alreadyConsumed } from '../../src/oidc/adapter.js';
import { Writes } from '../../src/store/request-state.js';
import { FIND_MODELS, WRITE } from '../../src/store/statements.js';
import { writeParameters } from '../../src/store/write-sender.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { TestStore } from '../helpers/databases.js';

type PlanNode = Record<string, unknown>;

/** The indexes a plan (EXPLAIN's JSON) reads, in plan order; of one CTE's subtree only, when `cte` names it. */
function indexesOf(plan: unknown, cte?: string): string[] {
  const names: string[] = [];
  const walk = (node: PlanNode, counted: boolean) => {
    const inside = counted || node['Subplan Name'] === `CTE ${cte}`;
    if (inside && typeof node['Index Name'] === 'string') names.push(node['Index Name']);
    for (const child of (node.Plans as PlanNode[] | undefined) ?? []) walk(child, inside);
  };
  walk((plan as [{ Plan: PlanNode }])[0].Plan, cte === undefined);
  return names;
}

/**
 * A fresh migrated PostgreSQL database for the enclosing describe block, filled by `seed` with a
 * client of its own; answers the indexes each statement's plan reads (EXPLAIN, values bound).
 */
function planningDatabase(seed: (client: pg.Client) => Promise<void>) {
  let store: TestStore | undefined;
  let client: pg.Client | undefined;
  beforeAll(async () => {
    store = await openTestDatabase('postgres', { migrated: true });
    client = new pg.Client({ connectionString: store.url });
    await client.connect();
    await seed(client);
  }, 60_000);
  afterAll(async () => {
    await client?.end();
    await store?.close();
  });
  return {
    query: (text: string) => client!.query(text),
    async explain(text: string, params: unknown[], cte?: string): Promise<string[]> {
      const { rows } = await client!.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
      return indexesOf(rows[0]['QUERY PLAN'], cte);
    },
  };
}

describe('oidc_models lookups on PostgreSQL', () => {
  const db = planningDatabase(async (client) => {
    // Statistics taken while the table held 100,000 tokens and a single code; then 2,000 codes.
    await client.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at)
      SELECT 'AccessToken', 'at-' || g, '{}', 'g-' || g, now() + interval '1 hour' FROM generate_series(1, 100000) g`);
    await client.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at) VALUES ('AuthorizationCode', 'code-0', '{}', 'g-0', now() + interval '10 minutes')`);
    await client.query('ANALYZE oidc_models');
    await client.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at)
      SELECT 'AuthorizationCode', 'code-' || g, '{}', 'g-' || g, now() + interval '10 minutes' FROM generate_series(1, 2000) g`);
  });

  test("a code's consume (the write statement's gate) and a lookup by id use the primary key", async () => {
    // The consume as the write statement sends it (store/statements.ts WRITE, its `took` part): values known when planned.
    for (const type of ['AuthorizationCode', 'RefreshToken', 'AccessToken']) {
      const writes = new Writes();
      writes.consumes.push({ type, id: 'code-77', refused: () => alreadyConsumed(type) });
      expect(await db.explain(WRITE.text, writeParameters([writes]), 'took')).toEqual(['oidc_models_pkey']);
      expect(await db.explain('SELECT payload FROM oidc_models WHERE type = $1 AND id = $2', [type, 'code-77'])).toEqual(['oidc_models_pkey']);
    }
  });

  test('lookups by uid and by user code still use their (partial) indexes', async () => {
    await db.query('SET enable_seqscan = off');
    try {
      expect(await db.explain('SELECT payload FROM oidc_models WHERE type = $1 AND uid = $2 LIMIT 1', ['Session', 'u-1'])).toEqual(['oidc_models_type_uid_idx']);
      expect(await db.explain('SELECT payload FROM oidc_models WHERE type = $1 AND user_code = $2 LIMIT 1', ['DeviceCode', 'ABCD-EFGH'])).toEqual(['oidc_models_type_user_code_idx']);
    } finally {
      await db.query('RESET enable_seqscan');
    }
  });
});

describe('revoking a grant\'s tokens on PostgreSQL', () => {
  const db = planningDatabase(async (client) => {
    // No statistics, and 20,000 dead access tokens left by earlier ones (no VACUUM since).
    await client.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at)
      SELECT 'AccessToken', 'old-' || g, '{}', 'old-g-' || g, now() + interval '1 hour' FROM generate_series(1, 20000) g`);
    await client.query('DELETE FROM oidc_models');
    await client.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at)
      SELECT 'AccessToken', 'at-' || g, '{}', 'g-' || g, now() + interval '1 hour' FROM generate_series(1, 20) g`);
  });

  test('revokeByGrantId (type and grant) reads the (grant_id, type) index alone', async () => {
    // Prisma's deleteMany({ where: { type, grantId } }) in src/oidc/adapter.ts, as SQL.
    expect(await db.explain('DELETE FROM oidc_models WHERE type = $1 AND grant_id = $2', ['AccessToken', 'g-5'])).toEqual(['oidc_models_grant_id_type_idx']);
  });
});

describe('the service\'s own statements, as oidc_models grows on PostgreSQL', () => {
  let store: TestStore;
  let admin: pg.Client;
  beforeAll(async () => {
    store = await openTestDatabase('postgres', { migrated: true });
    admin = new pg.Client({ connectionString: store.url });
    await admin.connect();
  }, 60_000);
  afterAll(async () => {
    await admin?.end();
    await store?.close();
  });

  /** The scans of oidc_models counted so far (pg_stat_user_tables), once the server has counted `more` of them. */
  async function scansOnceCounted(before: { seq: number; idx: number } | undefined, more: number) {
    for (let waited = 0; ; waited += 100) {
      const { rows: [row] } = await admin.query<{ seq: string; idx: string }>("SELECT seq_scan AS seq, idx_scan AS idx FROM pg_stat_user_tables WHERE relname = 'oidc_models'");
      const scans = { seq: Number(row!.seq), idx: Number(row!.idx ?? 0) };
      if (!before || scans.seq + scans.idx >= before.seq + before.idx + more) return scans;
      if (waited > 10_000) throw new Error(`the server counted ${scans.seq + scans.idx - before.seq - before.idx} of ${more} scans`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  test('the service\'s connections never JIT-compile a statement, and plan each execution with its values', async () => {
    const setting = async (name: string) => (await store.db.sql<{ setting: string }>({ text: 'SELECT current_setting($1) AS setting', values: [name] })).rows[0]!.setting;
    expect({ jit: await setting('jit'), plans: await setting('plan_cache_mode') }).toEqual({ jit: 'off', plans: 'force_custom_plan' });
  });

  test('a token lookup made many times while the table was empty still reads the primary key once it holds 50,000 tokens (never analyzed)', async () => {
    // The service's pool and its named statement, as a fresh deployment's first requests send it.
    const lookup = async (id: string) => {
      const found = await store.db.sql({ ...FIND_MODELS, values: [JSON.stringify([{ n: 0, type: 'AccessToken', id }])] });
      await store.db.sql({ text: 'SELECT pg_stat_force_next_flush()', values: [] }); // its counts now, not when next idle for 10 s
      return found;
    };
    const fresh = await scansOnceCounted(undefined, 0);
    for (let i = 0; i < 12; i += 1) await lookup(`missing-${i}`);
    const before = await scansOnceCounted(fresh, 12);
    // Tokens as the provider stores them: a payload of some 600 bytes each.
    await admin.query(`INSERT INTO oidc_models (type, id, payload, grant_id, expires_at)
      SELECT 'AccessToken', 'at-' || g, jsonb_build_object('jti', 'at-' || g, 'kind', 'AccessToken', 'claims', repeat('x', 560)), 'g-' || g, now() + interval '1 hour'
      FROM generate_series(1, 50000) g`);
    for (let i = 0; i < 4; i += 1) expect((await lookup(`at-${i * 1000 + 7}`)).rows).toHaveLength(1);
    const after = await scansOnceCounted(before, 4);
    expect({ seq: after.seq - before.seq, idx: after.idx - before.idx }).toEqual({ seq: 0, idx: 4 });
  }, 60_000);
});

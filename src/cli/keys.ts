/**
 * `keys:*`: the keys that sign ID tokens (docs/signing-keys.md). `keys:list` reads each key's
 * state on the database's clock; `keys:rotate` adds a key that is published at once and signs
 * once `--publish-ahead` has passed, and the key it replaces retires after every token it signed
 * has expired; `keys:generate` writes a private JWKS for JWKS_FILE, which seeds the key table on
 * a first start. The CLI needs the service's KEYS_ENCRYPTION_KEY (or its DATA_DIR) to rotate.
 *
 * @example node dist/cli.js keys:rotate --publish-ahead 1h
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../config.js';
import type { Config } from '../config.js';
import { retireAfterMs, minimumPublishAheadMs, stateAt } from '../keys/key-schedule.js';
import { newSigningKey } from '../keys/key-seed.js';
import { keyEncryption } from '../keys/key-encryption.js';
import { generateSigningKey } from '../keys/key-seed.js';
import { rotationDetail, signingKeyStore } from '../keys/signing-keys.js';
import type { StoredKey } from '../keys/signing-keys.js';
import { operatorRecords, withDatabase } from './admin.js';
import { formatGrace, parseGrace } from '../config/durations.js';
import { ArgumentError, parse, UsageError } from './args.js';
import { iso, json, table } from './output.js';
import type { VerbTable } from './verb.js';

const JSON_OPTION = { json: { type: 'boolean' } } as const;
const DEFAULT_PUBLISH_AHEAD = '1h';

/**
 * `--publish-ahead`: written as a grace is (config/durations.ts: `90s`, `30m`, `1h`, `7d`, at most
 * 30 days), and at least two reads of every instance (keys/key-schedule.ts).
 */
function publishAheadMs(value: string, config: Config): number {
  const ms = parseGrace(value);
  if (ms === undefined) throw new ArgumentError(`--publish-ahead must be a duration such as 90s, 30m, 1h or 7d (at most 30d), got "${value}"`);
  const min = minimumPublishAheadMs(config);
  if (ms < min) throw new ArgumentError(`--publish-ahead must be at least ${formatGrace(min)} (twice KEYS_POLL_INTERVAL_MS, so that every instance publishes the key before any signs with it), got ${value}`);
  return ms;
}

const keyJson = (key: StoredKey, now: Date) => ({
  kid: key.kid, alg: key.alg, state: stateAt(key, now.getTime()), created_at: iso(key.createdAt),
  current_at: iso(key.currentAt), retiring_at: iso(key.retiringAt), retired_at: iso(key.retiredAt),
});

export const KEY_VERBS: VerbTable = {
  'keys:list': {
    usage: '[--json]',
    summary: 'the signing keys: kid, algorithm, state (next, current, retiring, retired) and when each state begins',
    async run(args, io) {
      const { values } = parse(args, [], JSON_OPTION);
      const [keys, now] = await withDatabase(io, async (db) => {
        const store = signingKeyStore(db.prisma);
        return [await store.read({ withRetired: true }), await store.now()] as const;
      });
      const rows = keys.map((key) => keyJson(key, now));
      if (values.json) return json(rows);
      if (rows.length === 0) return 'no signing keys yet: the service stores the first when it starts';
      return table(['KID', 'ALG', 'STATE', 'CREATED', 'CURRENT_AT', 'RETIRING_AT', 'RETIRED_AT'],
        rows.map((row) => [row.kid, row.alg, row.state, row.created_at!, row.current_at!, row.retiring_at ?? '-', row.retired_at ?? '-']));
    },
  },
  'keys:rotate': {
    usage: `[--publish-ahead <duration>] [--json]`,
    summary: `a new signing key: published at once, signing after --publish-ahead (${DEFAULT_PUBLISH_AHEAD}); the key it replaces retires once its tokens have expired`,
    async run(args, io) {
      const { values } = parse(args, [], { 'publish-ahead': { type: 'string' }, ...JSON_OPTION });
      const config = loadConfig(io.env);
      const ahead = publishAheadMs(values['publish-ahead'] ?? DEFAULT_PUBLISH_AHEAD, config);
      const { next, replaced } = await withDatabase(io, async (db) => {
        const seal = keyEncryption(config);
        const store = signingKeyStore(db.prisma);
        // The new key must open where the others do: refused here with a wrong KEYS_ENCRYPTION_KEY.
        for (const key of await store.read()) seal.open(key.kid, key.sealed!);
        const key = newSigningKey();
        const { change } = operatorRecords(db, config, io.stderr);
        const { _max: longest } = await db.prisma.resourceServer.aggregate({ _max: { accessTokenTtl: true } });
        const sealed = { kid: key.kid, alg: key.alg, publicJwk: key.publicJwk, sealed: seal.seal(key.kid, key.privateJwk) };
        return change(async (tx, record) => {
          const rotation = await store.rotate(tx, sealed, { publishAheadMs: ahead, retireAfterMs: retireAfterMs(config, longest.accessTokenTtl ?? 0) });
          await record.audit('key.rotated', { detail: rotationDetail(rotation) }, io.context);
          return rotation;
        });
      }, { config });
      if (values.json) {
        return json({
          kid: next.kid, alg: next.alg, state: 'next', current_at: iso(next.currentAt),
          replaces: { kid: replaced.kid, retiring_at: iso(replaced.retiringAt), retired_at: iso(replaced.retiredAt) },
        });
      }
      return [
        `key ${next.kid} (${next.alg}) is published now and signs from ${iso(next.currentAt)}`,
        `key ${replaced.kid} signs until then and stays published until ${iso(replaced.retiredAt)}, when every token it signed has expired`,
        `every instance reads the change within ${config.signingKeys.pollIntervalMs / 1000} s (KEYS_POLL_INTERVAL_MS); keys:list shows the states`,
      ].join('\n');
    },
  },
  'keys:generate': {
    usage: '--out <file>',
    summary: 'write a private JWKS (for JWKS_FILE, which seeds the signing keys on a first start) and print a cookie key (for COOKIE_KEYS)',
    async run(args) {
      const { values } = parse(args, [], { out: { type: 'string' } });
      if (!values.out) throw new UsageError('missing --out <file> for the JWKS');
      fs.writeFileSync(values.out, JSON.stringify({ keys: [generateSigningKey()] }, null, 2), { mode: 0o600, flag: 'wx' });
      return `wrote a private JWKS to ${values.out} (set JWKS_FILE to it)\nCOOKIE_KEYS=${randomBytes(32).toString('base64url')}`;
    },
  },
};

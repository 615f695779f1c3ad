/**
 * The rows of the benchmark table, declared: each names what it drives and how it gets fresh
 * inputs. `plan(target, settings)` answers { driver, warmup(), runs(warmRate) } where warmup()
 * and runs() answer driver specs (runs: one per repetition, prepared before the measured
 * window opens so that minting inputs is never counted).
 *
 * | row       | request                                             | fresh input per request                 |
 * |-----------|-----------------------------------------------------|-----------------------------------------|
 * | discovery | GET /.well-known/openid-configuration               | –                                       |
 * | userinfo  | GET /api/userinfo.php, Bearer                       | –                                       |
 * | exchange  | POST /api/token.php, spec form body (code, id, secret) | a code from a silent authorization   |
 * | exchange-pkjwt | POST /api/token.php, code and a client assertion (private_key_jwt, RS256, keys registered inline) | a code, and an assertion signed before the run |
 * | refresh   | POST /api/token.php, grant_type=refresh_token       | the refresh token the last answer rotated |
 * | silent    | GET /api/authorize.php with a session and a consent → 303 with a code | –                |
 * | login     | a new browser: authorize → login → consent → code (8 at once) | –                             |
 * | 429       | POST /api/token.php over its limit (default limits) | –                                       |
 */
import fs from 'node:fs';
import path from 'node:path';
import { authorizePath } from './browser.mjs';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function writePool(dir, name, values) {
  const file = path.join(dir, `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(values));
  return file;
}

/** How many fresh inputs a run of `seconds` needs at `rate`, with headroom; capped. */
export function poolSize(rate, seconds, { min = 200, max = 60_000 } = {}) {
  return Math.min(max, Math.max(min, Math.ceil(rate * seconds * 1.8) + 200));
}

const cannon = (target, s, request, expect, extra = {}) => ({ url: target.base, connections: s.connections, seconds: s.seconds, request, expect, ...extra });

/** Paths of the stock provider (P) and of this service, for the rows both answer. */
const PATHS = {
  anchor: { discovery: '/.well-known/openid-configuration', userinfo: '/me', token: '/token' },
  service: { discovery: '/.well-known/openid-configuration', userinfo: '/api/userinfo.php', token: '/api/token.php' },
};

export const ROWS = {
  discovery: {
    title: 'discovery',
    plan: (target, s) => {
      const spec = cannon(target, s, { method: 'GET', path: PATHS[target.kind].discovery }, [200]);
      return { warmup: () => ({ ...spec, seconds: s.warmup }), runs: () => Array.from({ length: s.runs }, () => spec) };
    },
  },
  userinfo: {
    title: 'userinfo',
    plan: (target, s) => {
      const spec = cannon(target, s, { method: 'GET', path: PATHS[target.kind].userinfo, headers: { authorization: `Bearer ${target.accessToken}` } }, [200]);
      return { warmup: () => ({ ...spec, seconds: s.warmup }), runs: () => Array.from({ length: s.runs }, () => spec) };
    },
  },
  exchange: {
    title: 'code exchange',
    plan: (target, s) => {
      const mint = (n) => (target.kind === 'anchor' ? target.mint('code', n) : target.mintCodes(n));
      const body = target.codeBody('{value}').replace('%7Bvalue%7D', '{value}');
      const spec = async (seconds, n) => cannon(target, s, { method: 'POST', path: PATHS[target.kind].token, headers: FORM }, [200],
        { seconds, pool: { file: writePool(s.tmpDir, 'codes', await mint(n)), body } });
      return {
        warmup: () => spec(s.warmup, target.kind === 'anchor' ? 5000 : s.quick ? 300 : 1500),
        runs: async (rate) => {
          const specs = [];
          for (let i = 0; i < s.runs; i += 1) specs.push(await spec(s.seconds, poolSize(rate, s.seconds)));
          return specs;
        },
      };
    },
  },
  'exchange-pkjwt': {
    title: 'code exchange, private_key_jwt',
    serviceOnly: true,
    plan: (target, s) => {
      // Each request its own code and its own assertion (a jti is used once): both in the pool's value.
      const mint = async (n) => target.signedCodeBodies(await target.mintCodes(n, target.keyClient));
      const spec = async (seconds, n) => cannon(target, s, { method: 'POST', path: PATHS.service.token, headers: FORM }, [200],
        { seconds, pool: { file: writePool(s.tmpDir, 'signed', await mint(n)), body: '{value}', raw: true } });
      return {
        warmup: () => spec(s.warmup, s.quick ? 300 : 1500),
        runs: async (rate) => {
          const specs = [];
          for (let i = 0; i < s.runs; i += 1) specs.push(await spec(s.seconds, poolSize(rate, s.seconds)));
          return specs;
        },
      };
    },
  },
  refresh: {
    title: 'refresh grant',
    plan: (target, s) => {
      const chains = s.connections * 2;
      const mint = async (n) => {
        if (target.kind === 'anchor') return target.mint('refresh', n);
        const codes = await target.mintCodes(n);
        const tokens = [];
        for (const code of codes) tokens.push((await target.exchange(code)).refresh_token);
        return tokens;
      };
      const body = target.refreshBody('{value}').replace('%7Bvalue%7D', '{value}');
      const spec = async (seconds) => cannon(target, s, { method: 'POST', path: PATHS[target.kind].token, headers: FORM }, [200],
        { seconds, pool: { file: writePool(s.tmpDir, 'refresh', await mint(chains)), body, recycle: 'refresh_token' } });
      return {
        warmup: () => spec(s.warmup),
        runs: async () => {
          const specs = [];
          for (let i = 0; i < s.runs; i += 1) specs.push(await spec(s.seconds));
          return specs;
        },
      };
    },
  },
  silent: {
    title: 'silent authorize',
    serviceOnly: true,
    plan: (target, s) => {
      const spec = cannon(target, s, { method: 'GET', path: authorizePath(target.client), headers: { cookie: target.sessionCookie, accept: 'text/html' } }, [303]);
      return { warmup: () => ({ ...spec, seconds: s.warmup }), runs: () => Array.from({ length: s.runs }, () => spec) };
    },
  },
  login: {
    title: 'fresh login flow (8 at once)',
    serviceOnly: true,
    driver: 'flows',
    perFlow: true,
    plan: (target, s) => {
      const spec = { url: target.base, client: target.client, user: target.user, seconds: s.seconds, concurrency: 8 };
      return { warmup: () => ({ ...spec, seconds: s.warmup }), runs: () => Array.from({ length: s.runs }, () => spec) };
    },
  },
  429: {
    title: '429 refusal (token endpoint)',
    serviceOnly: true,
    refusing: true,
    plan: (target, s) => {
      const body = target.codeBody('no-such-code');
      const spec = { ...cannon(target, s, { method: 'POST', path: '/api/token.php', headers: FORM, body }, [429]), url: target.refusingBase };
      return { warmup: () => ({ ...spec, seconds: s.warmup }), runs: () => Array.from({ length: s.runs }, () => spec) };
    },
  },
};

export const ROW_IDS = ['discovery', 'userinfo', 'exchange', 'exchange-pkjwt', 'refresh', 'silent', 'login', '429'];

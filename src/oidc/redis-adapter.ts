/**
 * The adapter contract on Redis. Each instance is a hash `{payload, consumed?}` that expires
 * with the model; side indexes map grantId, uid and userCode to it.
 *
 * What a request reads is remembered for that request (store/request-state.ts; a consent post
 * asks for its interaction and its session three times over): as Redis answered it, parsed
 * afresh for each caller, and forgotten once the request writes that instance.
 *
 * Every call is one round trip: a lookup by index reads the index and the instance in one
 * script, and `destroy` takes the indexes to remove from what the request already read.
 * Scripts name the instance's key from the index's value, which standalone Redis (`REDIS_URL`)
 * allows and Redis Cluster would not.
 */
import type { Redis } from 'ioredis';
import { currentState, memoised } from '../store/request-state.js';
import type { Adapter, AdapterFor, AdapterPayload } from './adapter.js';
import { alreadyConsumed, CLAIMED, CLAIMED_ON_FIND, REPLAY_CLAIM_SECONDS, withConsumed } from './adapter.js';

/** Marks consumed only if the key exists and is not consumed yet: 1 = done, 0 = was consumed, -1 = absent. */
const CONSUME = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
return redis.call('HSETNX', KEYS[1], 'consumed', ARGV[1])`;

/** The instance an index key names: [id, the instance's hash fields and values], or nil. ARGV[1]: the model's key prefix. */
const FIND_VIA = `
local id = redis.call('GET', KEYS[1])
if not id then return false end
return {id, redis.call('HGETALL', ARGV[1] .. id)}`;

/** The instance's fields if it exists; else claims it (ARGV: its placeholder payload and lifetime) and answers nil. */
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HGETALL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'payload', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return false`;

/** Deletes an index key only while it still names this instance. */
const DELETE_IF_NAMES = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function redisAdapters(redis: Redis, prefix: string): AdapterFor {
  return (model): Adapter => {
    const key = (id: string) => `${prefix}${model}:${id}`;
    const grantKey = (grantId: string) => `${prefix}${model}:grant:${grantId}`;
    const uidKey = (uid: string) => `${prefix}${model}:uid:${uid}`;
    const userCodeKey = (userCode: string) => `${prefix}${model}:userCode:${userCode}`;

    async function find(id: string): Promise<AdapterPayload | undefined> {
      const { payload, consumed } = await memoised((state) => state.redis as Map<string, Record<string, string>>, key(id), () => redis.hgetall(key(id)));
      if (!payload) return undefined;
      return withConsumed(JSON.parse(payload) as AdapterPayload, consumed ? Number(consumed) : undefined);
    }

    /** {@link CLAIMED_ON_FIND}: one script, so that of two finds of one id exactly one misses. */
    async function claim(id: string): Promise<AdapterPayload | undefined> {
      const found = await redis.eval(CLAIM, 1, key(id), JSON.stringify(CLAIMED), String(REPLAY_CLAIM_SECONDS)) as string[] | null;
      if (!found) return undefined;
      const at = found.indexOf('payload');
      return at >= 0 ? JSON.parse(found[at + 1]!) as AdapterPayload : CLAIMED;
    }

    async function findVia(indexKey: string) {
      const id = await memoised((state) => state.redis as Map<string, string | null>, indexKey, async () => {
        const found = await redis.eval(FIND_VIA, 1, indexKey, key('')) as [string, string[]] | null;
        if (!found) return null;
        const [id, flat] = found;
        const fields: Record<string, string> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
        // What `find` would have read: the request's next look at this instance asks Redis nothing.
        const state = currentState();
        if (state && !state.redis.has(key(id))) state.redis.set(key(id), fields);
        return id;
      });
      return id ? find(id) : undefined;
    }

    /** This request wrote the instance `id`: its reads of it (and of any index) are read again. */
    const written = (id: string) => {
      const state = currentState();
      state?.redis.delete(key(id));
      state?.forgetRedis(uidKey(''));
      state?.forgetRedis(userCodeKey(''));
    };

    return {
      async upsert(id, payload, expiresIn) {
        written(id);
        const multi = redis.multi().del(key(id)).hset(key(id), 'payload', JSON.stringify(payload));
        if (expiresIn) multi.expire(key(id), expiresIn);
        if (payload.grantId) {
          multi.rpush(grantKey(payload.grantId), key(id));
          if (expiresIn) multi.expire(grantKey(payload.grantId), expiresIn, 'GT').expire(grantKey(payload.grantId), expiresIn, 'NX');
        }
        for (const indexKey of [payload.uid && uidKey(payload.uid), payload.userCode && userCodeKey(payload.userCode)]) {
          if (!indexKey) continue;
          if (expiresIn) multi.set(indexKey, id, 'EX', expiresIn);
          else multi.set(indexKey, id);
        }
        await multi.exec();
      },
      find: model === CLAIMED_ON_FIND ? claim : find,
      findByUid: (uid) => findVia(uidKey(uid)),
      findByUserCode: (userCode) => findVia(userCodeKey(userCode)),
      async consume(id) {
        written(id);
        const result = await redis.eval(CONSUME, 1, key(id), String(Math.floor(Date.now() / 1000)));
        if (result !== 1) throw alreadyConsumed(model);
      },
      async destroy(id) {
        // Its uid and user-code indexes go with it, or every ended session would leave its
        // index key behind for the session's whole TTL (14 days). An index that already names
        // a newer instance is left alone. Which indexes: from the instance as this request read
        // it (the provider destroys what it just found), else read now.
        const read = currentState()?.redis.get(key(id)) as { payload?: string } | undefined;
        written(id);
        const payload = read ? read.payload : await redis.hget(key(id), 'payload');
        const { uid, userCode } = payload ? JSON.parse(payload) as AdapterPayload : {};
        const multi = redis.multi().del(key(id));
        for (const indexKey of [uid && uidKey(uid), userCode && userCodeKey(userCode)]) {
          if (indexKey) multi.eval(DELETE_IF_NAMES, 1, indexKey, id);
        }
        await multi.exec();
      },
      async revokeByGrantId(grantId) {
        currentState()?.forgetRedis(key(''));
        const keys = await redis.lrange(grantKey(grantId), 0, -1);
        await redis.del(...keys, grantKey(grantId));
      },
    };
  };
}

/**
 * The adapter contract on Postgres through Prisma: one row per model instance in
 * `oidc_models`, keyed by (type, id). Expired rows read as absent.
 */
import type { PrismaClient } from '../generated/prisma/client.js';
import type { Prisma } from '../generated/prisma/client.js';
import type { Adapter, AdapterFor, AdapterPayload } from './adapter.js';
import { alreadyConsumed, withConsumed } from './adapter.js';

interface Row {
  payload: Prisma.JsonValue;
  expiresAt: Date | null;
  consumedAt: Date | null;
}

function live(row: Row | null): AdapterPayload | undefined {
  if (!row || (row.expiresAt && row.expiresAt.getTime() <= Date.now())) return undefined;
  const consumed = row.consumedAt ? Math.floor(row.consumedAt.getTime() / 1000) : undefined;
  return withConsumed(row.payload as AdapterPayload, consumed);
}

/** Postgres text cannot hold NUL; such a value names nothing we stored. */
const storable = (value: string) => value.length <= 1024 && !value.includes('\0');

export function postgresAdapters(prisma: PrismaClient): AdapterFor {
  return (type): Adapter => ({
    async upsert(id, payload, expiresIn) {
      const data = {
        payload: payload as Prisma.InputJsonValue,
        grantId: payload.grantId ?? null,
        uid: payload.uid ?? null,
        userCode: payload.userCode ?? null,
        expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      };
      await prisma.oidcModel.upsert({ where: { type_id: { type, id } }, create: { type, id, ...data }, update: data });
    },
    async find(id) {
      if (!storable(id)) return undefined;
      return live(await prisma.oidcModel.findUnique({ where: { type_id: { type, id } } }));
    },
    async findByUid(uid) {
      if (!storable(uid)) return undefined;
      return live(await prisma.oidcModel.findFirst({ where: { type, uid } }));
    },
    async findByUserCode(userCode) {
      if (!storable(userCode)) return undefined;
      return live(await prisma.oidcModel.findFirst({ where: { type, userCode } }));
    },
    async consume(id) {
      const { count } = await prisma.oidcModel.updateMany({
        where: { type, id, consumedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }] },
        data: { consumedAt: new Date() },
      });
      if (count === 0) throw alreadyConsumed(type);
    },
    async destroy(id) {
      await prisma.oidcModel.deleteMany({ where: { type, id } });
    },
    async revokeByGrantId(grantId) {
      await prisma.oidcModel.deleteMany({ where: { type, grantId } });
    },
  });
}

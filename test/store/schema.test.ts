/**
 * prisma/schema.prisma and prisma/migrations/ describe the same database: every model works
 * through the generated client on the migrated tables, and every field of every model is a
 * column of compatible type and nullability, with no column, table or key left over.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Prisma } from '../../src/generated/prisma/client.js';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { openTestDatabase } from '../helpers/databases.js';
import type { TestStore } from '../helpers/databases.js';
import { expectedColumnType, parseSchemaModels, runtimeDataModel, SCHEMA_FILE } from '../helpers/prisma-model.js';
import type { RuntimeDataModel, SchemaModel } from '../helpers/prisma-model.js';

let store: TestStore;
let prisma: PrismaClient;
beforeAll(async () => {
  store = await openTestDatabase('postgres', { migrated: true });
  prisma = store.db.prisma;
});
afterAll(async () => { await store?.close(); });

describe('every model through the generated client', () => {
  test('User: create, read, update, delete; username is unique; created_at defaults to now', async () => {
    const id = randomUUID();
    const start = Date.now();
    const created = await prisma.user.create({
      data: { id, username: `u-${id}`, email: 'a@example.com', fullName: 'A Person', passwordHash: '$argon2id$x' },
    });
    expect(created).toEqual({
      id, username: `u-${id}`, email: 'a@example.com', fullName: 'A Person', passwordHash: '$argon2id$x', createdAt: expect.any(Date), disabledAt: null, sessionsEndedAt: null, emailVerified: false,
    });
    expect(Math.abs(created.createdAt.getTime() - start)).toBeLessThan(60_000);
    expect(await prisma.user.findUnique({ where: { username: `u-${id}` } })).toEqual(created);

    await expect(prisma.user.create({
      data: { id: randomUUID(), username: `u-${id}`, email: 'b@example.com', fullName: 'B', passwordHash: 'h' },
    })).rejects.toMatchObject({ code: 'P2002' });

    const disabledAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const updated = await prisma.user.update({ where: { id }, data: { email: 'new@example.com', fullName: 'Renamed', disabledAt } });
    expect(updated).toEqual({ ...created, email: 'new@example.com', fullName: 'Renamed', disabledAt });

    await prisma.user.delete({ where: { id } });
    expect(await prisma.user.findUnique({ where: { id } })).toBeNull();
  });

  test('Client: create, read, update (updated_at moves), delete', async () => {
    const clientId = randomUUID();
    const created = await prisma.client.create({
      data: { clientId, clientSecretHash: 'a'.repeat(64), clientName: 'App', redirectUri: 'https://app.example/cb' },
    });
    expect(created).toEqual({
      clientId, clientSecretHash: 'a'.repeat(64), previousSecretHash: null, previousSecretExpiresAt: null, clientName: 'App', redirectUri: 'https://app.example/cb',
      createdAt: expect.any(Date), updatedAt: expect.any(Date), registration: 'spec', metadata: {}, lastUsedAt: null,
    });
    expect(await prisma.client.findUnique({ where: { clientId } })).toEqual(created);

    await new Promise((resolve) => setTimeout(resolve, 5));
    const updated = await prisma.client.update({ where: { clientId }, data: { clientName: 'Renamed App' } });
    expect(updated.clientName).toBe('Renamed App');
    expect(updated.createdAt).toEqual(created.createdAt);
    expect(updated.updatedAt.getTime()).toBeGreaterThan(created.updatedAt.getTime());

    await prisma.client.delete({ where: { clientId } });
    expect(await prisma.client.findUnique({ where: { clientId } })).toBeNull();
  });

  test('Client registered with RFC 7591: metadata as JSON, no secret for a public client; a spec client must have one', async () => {
    const clientId = randomUUID();
    const metadata = { redirect_uris: ['http://127.0.0.1/cb', 'com.example.app:/cb'], token_endpoint_auth_method: 'none', application_type: 'native' };
    const lastUsedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const created = await prisma.client.create({
      data: { clientId, clientName: 'CLI', redirectUri: 'http://127.0.0.1/cb', registration: 'rfc7591', metadata, lastUsedAt },
    });
    expect(created).toMatchObject({ clientSecretHash: null, registration: 'rfc7591', metadata, lastUsedAt });
    await expect(prisma.client.create({ data: { clientId: randomUUID(), clientName: 'No secret', redirectUri: 'https://app.example/cb' } }))
      .rejects.toThrow(/clients_secret_check/);
    await expect(prisma.client.create({ data: { clientId: randomUUID(), clientSecretHash: 'h', clientName: 'X', redirectUri: 'https://app.example/cb', registration: 'other' } }))
      .rejects.toThrow(/clients_registration_check/);
    await prisma.client.delete({ where: { clientId } });
  });

  test('ResourceServer: create with text[] scopes, read; one URI with and without a trailing slash is one resource', async () => {
    const uri = `https://api.example/${randomUUID()}`;
    const created = await prisma.resourceServer.create({ data: { uri, name: 'API', scopes: ['api:read', 'api:write'], accessTokenTtl: 600 } });
    expect(created).toEqual({ uri, name: 'API', scopes: ['api:read', 'api:write'], accessTokenTtl: 600, createdAt: expect.any(Date) });
    await expect(prisma.resourceServer.create({ data: { uri: `${uri}/`, name: 'Again', scopes: ['x'], accessTokenTtl: 60 } }))
      .rejects.toMatchObject({ code: 'P2002' });
    await prisma.resourceServer.delete({ where: { uri } });
  });

  test('OidcModel: create with the composite key, JSON payload and nulls; read, update, delete', async () => {
    const id = randomUUID();
    const payload = { jti: id, kind: 'AccessToken', nested: { list: [1, 'two', null], flag: true } };
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000);
    const created = await prisma.oidcModel.create({ data: { type: 'AccessToken', id, payload, expiresAt } });
    expect(created).toEqual({
      type: 'AccessToken', id, payload, grantId: null, uid: null, userCode: null, expiresAt, consumedAt: null,
    });
    // The same id under another type is another row.
    await prisma.oidcModel.create({ data: { type: 'AuthorizationCode', id, payload: {}, grantId: 'g', uid: 'u', userCode: 'c' } });
    expect(await prisma.oidcModel.findUnique({ where: { type_id: { type: 'AccessToken', id } } })).toEqual(created);
    expect(await prisma.oidcModel.findFirst({ where: { type: 'AuthorizationCode', uid: 'u', userCode: 'c', grantId: 'g' } }))
      .toMatchObject({ id, payload: {} });

    const consumedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
    const updated = await prisma.oidcModel.update({
      where: { type_id: { type: 'AccessToken', id } },
      data: { consumedAt, payload: { replaced: true }, expiresAt: null },
    });
    expect(updated).toEqual({ ...created, consumedAt, payload: { replaced: true }, expiresAt: null });

    await prisma.oidcModel.delete({ where: { type_id: { type: 'AccessToken', id } } });
    expect(await prisma.oidcModel.findUnique({ where: { type_id: { type: 'AccessToken', id } } })).toBeNull();
    expect(await prisma.oidcModel.deleteMany({ where: { id } })).toEqual({ count: 1 });
  });

  test('WebhookEndpoint and WebhookDelivery: create with defaults, text[] and JSON, read, update; a deleted client\'s endpoint stays without it; deleting the endpoint removes its deliveries', async () => {
    const clientId = randomUUID();
    await prisma.client.create({ data: { clientId, clientSecretHash: 'a'.repeat(64), clientName: 'App', redirectUri: 'https://app.example/cb' } });
    const endpoint = await prisma.webhookEndpoint.create({
      data: { id: `ep_${clientId}`, clientId, url: 'https://app.example/hook', events: ['token.issued', 'client.updated'], secret: 'whsec_x' },
    });
    expect(endpoint).toEqual({
      id: `ep_${clientId}`, clientId, url: 'https://app.example/hook', events: ['token.issued', 'client.updated'], secret: 'whsec_x', previousSecret: null, previousSecretExpiresAt: null,
      enabled: true, disabledReason: null, createdAt: expect.any(Date),
    });
    expect(await prisma.webhookEndpoint.findMany({ where: { events: { has: 'client.updated' }, clientId } })).toEqual([endpoint]);

    const payload = { id: 'evt_1', type: 'token.issued', created_at: new Date().toISOString(), data: { client_id: clientId, client_name: 'App' } };
    const delivery = await prisma.webhookDelivery.create({
      data: { id: `msg_${clientId}`, endpointId: endpoint.id, eventId: 'evt_1', eventType: 'token.issued', payload, nextAttemptAt: new Date() },
    });
    expect(delivery).toEqual({
      id: `msg_${clientId}`, endpointId: endpoint.id, eventId: 'evt_1', eventType: 'token.issued', payload, status: 'pending', attempts: 0,
      nextAttemptAt: expect.any(Date), leaseOwner: null, leaseExpiresAt: null, lastAttemptAt: null, lastStatusCode: null,
      lastError: null, deliveredAt: null, createdAt: expect.any(Date),
    });
    const updated = await prisma.webhookDelivery.update({
      where: { id: delivery.id }, data: { status: 'delivered', attempts: { increment: 1 }, lastStatusCode: 204, deliveredAt: new Date() },
    });
    expect(updated).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 204 });

    // Deleting a client leaves its endpoints without one (they still deliver what is pending);
    // deleting an endpoint removes its delivery log.
    await prisma.client.delete({ where: { clientId } });
    expect(await prisma.webhookEndpoint.findUnique({ where: { id: endpoint.id } })).toEqual({ ...endpoint, clientId: null });
    await prisma.webhookEndpoint.delete({ where: { id: endpoint.id } });
    expect(await prisma.webhookDelivery.findUnique({ where: { id: delivery.id } })).toBeNull();
  });

  test('AuditEvent: ids increase, created_at and detail default; user_id and client_id name no row (no foreign key)', async () => {
    const first = await prisma.auditEvent.create({ data: { event: 'user.deleted', actor: 'operator', userId: randomUUID(), clientId: 'gone-client' } });
    expect(first).toEqual({
      id: expect.any(BigInt), createdAt: expect.any(Date), event: 'user.deleted', actor: 'operator', userId: first.userId, clientId: 'gone-client',
      address: null, requestId: null, detail: {},
    });
    const second = await prisma.auditEvent.create({
      data: { event: 'login.failed', actor: 'anonymous', address: '192.0.2.1', requestId: 'req-1', detail: { reason: 'unknown_user', nested: [1] } },
    });
    expect(second.id).toBeGreaterThan(first.id);
    expect(await prisma.auditEvent.findMany({ where: { address: '192.0.2.1' } })).toEqual([second]);
    await prisma.auditEvent.deleteMany({ where: { id: { in: [first.id, second.id] } } });
  });

  test('SigningKey: create with JSON and nulls, read, update, delete; times in order; at most one key without a successor', async () => {
    const at = new Date('2026-11-27T10:00:00.000Z');
    const later = (ms: number) => new Date(at.getTime() + ms);
    const key = { kid: `k-${randomUUID()}`, alg: 'RS256', publicJwk: { kty: 'RSA', n: 'n', e: 'AQAB' }, privateJwk: 'v1.sealed', currentAt: at };
    const created = await prisma.signingKey.create({ data: key });
    expect(created).toEqual({ ...key, createdAt: expect.any(Date), retiringAt: null, retiredAt: null });
    await expect(prisma.signingKey.create({ data: { ...key, kid: `k-${randomUUID()}` } })).rejects.toThrow(/signing_keys_one_unreplaced_idx|Unique constraint/);
    await expect(prisma.signingKey.update({ where: { kid: key.kid }, data: { retiringAt: later(-1), retiredAt: later(10) } })).rejects.toThrow(/signing_keys_times_check|check constraint/i);
    await expect(prisma.signingKey.update({ where: { kid: key.kid }, data: { retiringAt: later(1000) } })).rejects.toThrow(/signing_keys_times_check|check constraint/i);
    const replaced = await prisma.signingKey.update({ where: { kid: key.kid }, data: { retiringAt: later(1000), retiredAt: later(5000), privateJwk: null } });
    expect(replaced).toEqual({ ...created, retiringAt: later(1000), retiredAt: later(5000), privateJwk: null });
    await prisma.signingKey.delete({ where: { kid: key.kid } });
    expect(await prisma.signingKey.findUnique({ where: { kid: key.kid } })).toBeNull();
  });

  test('BackchannelLogout: create with defaults and a null sid, read, update, delete', async () => {
    const message = { id: `bcl_${randomUUID()}`, clientId: 'a-client', url: 'https://rp.example/logout', accountId: randomUUID(), sid: null, nextAttemptAt: new Date() };
    const created = await prisma.backchannelLogout.create({ data: message });
    expect(created).toEqual({
      ...message, status: 'pending', attempts: 0, leaseOwner: null, leaseExpiresAt: null, lastAttemptAt: null, lastStatusCode: null, lastError: null, deliveredAt: null,
      createdAt: expect.any(Date),
    });
    const delivered = await prisma.backchannelLogout.update({ where: { id: message.id }, data: { status: 'delivered', attempts: 1, lastStatusCode: 200, deliveredAt: new Date() } });
    expect(delivered).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 200 });
    await prisma.backchannelLogout.delete({ where: { id: message.id } });
    expect(await prisma.backchannelLogout.findUnique({ where: { id: message.id } })).toBeNull();
  });

  test('AccountToken: create, use once, deleted with its user; MailMessage: create, claim fields, read', async () => {
    const id = randomUUID();
    await prisma.user.create({ data: { id, username: `t-${id}`, email: 'a@example.com', fullName: 'A', passwordHash: 'h' } });
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000);
    const token = await prisma.accountToken.create({ data: { digest: `d-${id}`, purpose: 'password_reset', userId: id, email: 'a@example.com', expiresAt } });
    expect(token).toEqual({ digest: `d-${id}`, purpose: 'password_reset', userId: id, email: 'a@example.com', createdAt: expect.any(Date), expiresAt, usedAt: null });
    expect((await prisma.accountToken.updateMany({ where: { digest: `d-${id}`, usedAt: null }, data: { usedAt: new Date() } })).count).toBe(1);
    expect((await prisma.accountToken.updateMany({ where: { digest: `d-${id}`, usedAt: null }, data: { usedAt: new Date() } })).count).toBe(0);
    await prisma.user.delete({ where: { id } });
    expect(await prisma.accountToken.findUnique({ where: { digest: `d-${id}` } })).toBeNull();

    const mail = await prisma.mailMessage.create({ data: { id: `m-${id}`, kind: 'email_verification', recipient: 'a@example.com', userId: id, sendBefore: expiresAt, nextAttemptAt: expiresAt } });
    expect(mail).toEqual({
      id: `m-${id}`, kind: 'email_verification', recipient: 'a@example.com', userId: id, status: 'pending', attempts: 0, nextAttemptAt: expiresAt,
      leaseOwner: null, leaseExpiresAt: null, sendBefore: expiresAt, lastError: null, sentAt: null, createdAt: expect.any(Date),
    });
    await prisma.mailMessage.delete({ where: { id: `m-${id}` } });
  });

  test('the tests above cover every model the client knows', () => {
    expect(Object.values(Prisma.ModelName).sort()).toEqual(['AccountToken', 'AuditEvent', 'BackchannelLogout', 'Client', 'MailMessage', 'OidcModel', 'ResourceServer', 'SigningKey', 'User', 'WebhookDelivery', 'WebhookEndpoint']);
  });
});

interface Column {
  table_name: string;
  column_name: string;
  udt_name: string;
  is_nullable: 'YES' | 'NO';
  datetime_precision: number | null;
  character_maximum_length: number | null;
}

interface Catalogue {
  tables: string[];
  columns: Column[];
  primaryKeys: { table_name: string; column_name: string }[];
}

async function readCatalogue(): Promise<Catalogue> {
  return store.db.withConnection(async (sql) => ({
    tables: (await sql.query<{ table_name: string }>(`
      SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> '_prisma_migrations'`))
      .rows.map((row) => row.table_name),
    columns: (await sql.query<Column>(`
      SELECT table_name, column_name, udt_name, is_nullable, datetime_precision, character_maximum_length
      FROM information_schema.columns WHERE table_schema = 'public'`)).rows,
    primaryKeys: (await sql.query<{ table_name: string; column_name: string }>(`
      SELECT c.table_name, k.column_name FROM information_schema.table_constraints c
      JOIN information_schema.key_column_usage k USING (constraint_schema, constraint_name)
      WHERE c.table_schema = 'public' AND c.constraint_type = 'PRIMARY KEY'`)).rows,
  }));
}

/** Every disagreement between the data model and the database, one line each. */
function driftProblems(dataModel: RuntimeDataModel, schema: Map<string, SchemaModel>, db: Catalogue): string[] {
  const problems: string[] = [];
  const modelTables = new Set<string>();
  for (const [modelName, model] of Object.entries(dataModel.models)) {
    const table = model.dbName ?? modelName;
    modelTables.add(table);
    const declared = schema.get(modelName);
    if (!declared) {
      problems.push(`model ${modelName} is in the generated client but not in schema.prisma (regenerate the client)`);
      continue;
    }
    const scalars = model.fields.filter((field) => field.kind !== 'object');
    const declaredScalars = declared.fields.filter((field) => !schema.has(field.type));
    const signature = (fields: { name: string; type: string }[]) => fields.map((f) => `${f.name}:${f.type}`).sort().join(', ');
    if (signature(scalars) !== signature(declaredScalars)) {
      problems.push(`${modelName}: the generated client (${signature(scalars)}) differs from schema.prisma (${signature(declaredScalars)}): regenerate the client`);
      continue;
    }
    const columns = new Map(db.columns.filter((c) => c.table_name === table).map((c) => [c.column_name, c]));
    if (columns.size === 0) problems.push(`${modelName}: table ${table} does not exist`);
    const columnOf = new Map<string, string>();
    for (const field of scalars) {
      const columnName = field.dbName ?? field.name;
      columnOf.set(field.name, columnName);
      const column = columns.get(columnName);
      const where = `${modelName}.${field.name} → ${table}.${columnName}`;
      if (!column) {
        if (columns.size > 0) problems.push(`${where}: no such column`);
        continue;
      }
      columns.delete(columnName);
      const spec = declared.fields.find((f) => f.name === field.name)!;
      const expected = expectedColumnType(spec);
      const size = expected.udt.startsWith('timestamp') ? column.datetime_precision : column.character_maximum_length;
      if (column.udt_name !== expected.udt || (expected.size !== undefined && size !== expected.size)) {
        problems.push(`${where}: column is ${column.udt_name}(${size ?? ''}), the schema wants ${expected.udt}(${expected.size ?? ''})`);
      }
      if ((column.is_nullable === 'YES') !== spec.optional) {
        problems.push(`${where}: column is ${column.is_nullable === 'YES' ? 'nullable' : 'NOT NULL'}, the field is ${spec.optional ? 'optional' : 'required'}`);
      }
    }
    for (const extra of columns.keys()) problems.push(`${table}.${extra}: column has no field in model ${modelName}`);
    const dbKey = db.primaryKeys.filter((k) => k.table_name === table).map((k) => k.column_name).sort();
    const schemaKey = declared.primaryKey.map((f) => columnOf.get(f) ?? f).sort();
    if (dbKey.join() !== schemaKey.join()) problems.push(`${table}: primary key is (${dbKey}), the schema says (${schemaKey})`);
  }
  for (const table of db.tables) if (!modelTables.has(table)) problems.push(`table ${table} has no model`);
  return problems;
}

describe('schema.prisma matches the migrated tables', () => {
  test('every field is a column of compatible type and nullability; no column, table or key is left over', async () => {
    const problems = driftProblems(runtimeDataModel(prisma), parseSchemaModels(), await readCatalogue());
    expect(problems).toEqual([]);
  });

  // The comparison itself must be able to fail: feed it drifts on purpose.
  test('a field whose nullability differs from its column is reported', async () => {
    const drifted = fs.readFileSync(SCHEMA_FILE, 'utf8').replace(/^(\s+email\s+)String\b/m, '$1String?');
    const problems = driftProblems(runtimeDataModel(prisma), parseSchemaModels(drifted), await readCatalogue());
    expect(problems).toEqual([expect.stringMatching(/^User\.email → users\.email: column is NOT NULL, the field is optional$/)]);
  });

  test('a native type that differs from the column is reported', async () => {
    const drifted = fs.readFileSync(SCHEMA_FILE, 'utf8').replace(/(consumedAt\s+DateTime\?.*)@db\.Timestamptz\(3\)/, '$1@db.Timestamp(3)');
    const problems = driftProblems(runtimeDataModel(prisma), parseSchemaModels(drifted), await readCatalogue());
    expect(problems).toEqual([expect.stringContaining('OidcModel.consumedAt → oidc_models.consumed_at: column is timestamptz(3)')]);
  });

  test('a column or table the schema lacks is reported', async () => {
    await store.db.withConnection((sql) => sql.exec('ALTER TABLE users ADD COLUMN nickname TEXT; CREATE TABLE stray (id INT PRIMARY KEY)'));
    try {
      const problems = driftProblems(runtimeDataModel(prisma), parseSchemaModels(), await readCatalogue());
      expect(problems.sort()).toEqual(['table stray has no model', 'users.nickname: column has no field in model User']);
    } finally {
      await store.db.withConnection((sql) => sql.exec('ALTER TABLE users DROP COLUMN nickname; DROP TABLE stray'));
    }
  });
});

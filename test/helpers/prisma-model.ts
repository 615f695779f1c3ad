/**
 * What the Prisma schema says each model looks like, for comparing it with the migrated
 * tables.
 *
 * Prisma 7's `prisma-client` generator no longer exports `Prisma.dmmf`; the generated client
 * carries only a runtime data model (models → fields with name, kind, type and the mapped
 * `dbName`), without nullability, native types or keys. Those few attributes are read here
 * from prisma/schema.prisma; the two sources are compared field by field so that a client
 * generated from another schema fails too.
 */
import fs from 'node:fs';
import type { PrismaClient } from '../../src/generated/prisma/client.js';

export const SCHEMA_FILE = new URL('../../prisma/schema.prisma', import.meta.url);

/** The generated client's own data model (`PrismaClient#_runtimeDataModel`). */
export interface RuntimeDataModel {
  models: Record<string, {
    dbName: string | null;
    fields: { name: string; kind: 'scalar' | 'object' | 'enum' | 'unsupported'; type: string; dbName?: string | null }[];
  }>;
}

export function runtimeDataModel(prisma: PrismaClient): RuntimeDataModel {
  const model = (prisma as unknown as { _runtimeDataModel?: RuntimeDataModel })._runtimeDataModel;
  if (!model?.models) throw new Error('the generated Prisma client exposes no _runtimeDataModel: update test/helpers/prisma-model.ts');
  return model;
}

export interface SchemaField {
  name: string;
  type: string;
  optional: boolean;
  list: boolean;
  /** `@db.Timestamptz(3)` → { name: 'Timestamptz', args: ['3'] } */
  nativeType: { name: string; args: string[] } | undefined;
  id: boolean;
}

export interface SchemaModel {
  name: string;
  fields: SchemaField[];
  /** Field names of `@id` or `@@id([...])`. */
  primaryKey: string[];
}

const FIELD = /^(\w+)\s+(\w+)(\?|\[\])?(?:\s+(.*))?$/;

/** The models of a Prisma schema (enough of the language for this project's schema). */
export function parseSchemaModels(source = fs.readFileSync(SCHEMA_FILE, 'utf8')): Map<string, SchemaModel> {
  const models = new Map<string, SchemaModel>();
  for (const [, name, body] of source.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
    const fields: SchemaField[] = [];
    let primaryKey: string[] = [];
    for (const raw of body!.split('\n')) {
      const line = raw.replace(/\/\/.*$/, '').trim();
      if (line === '') continue;
      const compoundId = /^@@id\(\s*\[([^\]]*)\]/.exec(line);
      if (compoundId) primaryKey = compoundId[1]!.split(',').map((f) => f.trim());
      if (line.startsWith('@@')) continue;
      const match = FIELD.exec(line);
      if (!match) throw new Error(`cannot read this line of model ${name}: ${line}`);
      const attributes = match[4] ?? '';
      const native = /@db\.(\w+)(?:\(([^)]*)\))?/.exec(attributes);
      fields.push({
        name: match[1]!,
        type: match[2]!,
        optional: match[3] === '?',
        list: match[3] === '[]',
        nativeType: native ? { name: native[1]!, args: native[2] ? native[2].split(',').map((a) => a.trim()) : [] } : undefined,
        id: /@id\b/.test(attributes),
      });
    }
    if (primaryKey.length === 0) primaryKey = fields.filter((f) => f.id).map((f) => f.name);
    models.set(name!, { name: name!, fields, primaryKey });
  }
  return models;
}

export interface ColumnType {
  /** information_schema.columns.udt_name */
  udt: string;
  /** datetime_precision or character_maximum_length, where the type has one */
  size?: number;
}

/**
 * The PostgreSQL column type Prisma uses for a scalar field.
 * @see https://www.prisma.io/docs/orm/reference/prisma-schema-reference#model-field-scalar-types
 */
export function expectedColumnType(field: SchemaField): ColumnType {
  const native = field.nativeType;
  const size = native?.args[0] === undefined ? undefined : Number(native.args[0]);
  const byNative: Record<string, ColumnType> = {
    Uuid: { udt: 'uuid' },
    Text: { udt: 'text' },
    VarChar: { udt: 'varchar', ...(size === undefined ? {} : { size }) },
    Timestamptz: { udt: 'timestamptz', size: size ?? 6 },
    Timestamp: { udt: 'timestamp', size: size ?? 6 },
    Integer: { udt: 'int4' },
    Json: { udt: 'json' },
    JsonB: { udt: 'jsonb' },
  };
  const byScalar: Record<string, ColumnType> = {
    String: { udt: 'text' },
    DateTime: { udt: 'timestamp', size: 3 },
    Json: { udt: 'jsonb' },
    Int: { udt: 'int4' },
    BigInt: { udt: 'int8' },
    Boolean: { udt: 'bool' },
    Float: { udt: 'float8' },
    Decimal: { udt: 'numeric' },
    Bytes: { udt: 'bytea' },
  };
  const type = native ? byNative[native.name] : byScalar[field.type];
  if (!type) throw new Error(`no known column type for ${field.name} ${field.type}${native ? ` @db.${native.name}` : ''}: extend expectedColumnType`);
  return field.list ? { udt: `_${type.udt}` } : type;
}

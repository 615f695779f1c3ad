/**
 * The tables of who may do what, read from docs/security.md, so that the document and the test
 * that walks them (test/security/who-may-do-what.test.ts) cannot drift apart: the test asserts
 * every cell the page states, and fails on a row, column or credential the page lacks. Two tables:
 * clients that hold secrets (or none) and users, tried with secrets; clients that sign assertions
 * with their keys (private_key_jwt), tried with assertions.
 *
 * A cell lists what each credential gets, in groups separated by ` · `: `current grace → 200`,
 * and `else → 401 invalid_client` for every credential not named before; `n/a` means the
 * credential cannot be formed for that principal (a public client has no secret to rotate).
 *
 * @example const table = readAccessTable(SECRETS); table.expected('token (code)', 'public web', 'wrong') // '401 invalid_client'
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CREDENTIALS = ['current', 'grace', 'ended', 'empty', 'wrong', 'other', 'decoy', 'foreign'] as const;
export const KEY_CREDENTIALS = ['current', 'empty', 'wrong', 'other', 'decoy', 'foreign', 'replayed', 'expired', 'audience'] as const;
export type Credential = (typeof CREDENTIALS)[number] | (typeof KEY_CREDENTIALS)[number];

/** Which table: its marker in the page and the credentials its cells name. */
export interface TableKind {
  readonly marker: string;
  readonly credentials: readonly Credential[];
}

export const SECRETS: TableKind = { marker: 'who-may-do-what', credentials: CREDENTIALS };
export const KEYS: TableKind = { marker: 'who-may-do-what (key clients)', credentials: KEY_CREDENTIALS };

const DOC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/security.md');

export interface AccessTable {
  readonly rows: readonly string[];
  readonly columns: readonly string[];
  readonly credentials: readonly Credential[];
  /** The answer the page states for one credential in one cell. */
  expected(row: string, column: string, credential: Credential): string;
}

function parseCell(cell: string, where: string, credentials: readonly Credential[]): Map<Credential, string> {
  const answers = new Map<Credential, string>();
  for (const group of cell.split(' · ')) {
    const [names, answer] = group.split(' → ').map((part) => part.trim());
    if (!names || !answer) throw new Error(`${where}: "${group}" is not "credentials → answer"`);
    const listed = names === 'else' ? credentials.filter((c) => !answers.has(c)) : names.split(/\s+/);
    for (const name of listed) {
      if (!(credentials as readonly string[]).includes(name)) throw new Error(`${where}: unknown credential "${name}"`);
      if (answers.has(name as Credential) && names !== 'else') throw new Error(`${where}: "${name}" given twice`);
      answers.set(name as Credential, answer);
    }
  }
  const missing = credentials.filter((c) => !answers.has(c));
  if (missing.length) throw new Error(`${where}: no answer for ${missing.join(', ')}`);
  return answers;
}

export function readAccessTable(kind: TableKind = SECRETS, text = fs.readFileSync(DOC, 'utf8')): AccessTable {
  const start = `<!-- ${kind.marker}: begin -->`;
  const end = `<!-- ${kind.marker}: end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/security.md has no table between ${start} and ${end}`);
  const lines = text.slice(from + start.length, to).split('\n').map((line) => line.trim()).filter((line) => line.startsWith('|'));
  const split = (line: string) => line.slice(1, -1).split('|').map((cell) => cell.trim().replace(/^`|`$/g, ''));
  const [header, , ...body] = lines;
  const columns = split(header!).slice(1);
  const cells = new Map<string, Map<string, Map<Credential, string>>>();
  for (const line of body) {
    const [row, ...rest] = split(line);
    if (rest.length !== columns.length) throw new Error(`row "${row}" has ${rest.length} cells for ${columns.length} columns`);
    cells.set(row!, new Map(columns.map((column, i) => [column, parseCell(rest[i]!, `${row} × ${column}`, kind.credentials)])));
  }
  return {
    rows: [...cells.keys()],
    columns,
    credentials: kind.credentials,
    expected(row, column, credential) {
      const answer = cells.get(row)?.get(column)?.get(credential);
      if (answer === undefined) throw new Error(`the table has no cell ${row} × ${column}`);
      return answer;
    },
  };
}

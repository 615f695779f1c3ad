/**
 * What the CLI prints: aligned columns for people, JSON (`--json`) for scripts. Times are
 * ISO 8601 in UTC either way.
 *
 * @example return table(['ID', 'USERNAME'], users.map((u) => [u.id, u.username]));
 */
import { grantCount } from '../oidc/authorized-apps.js';
import type { ApplicationRevoked } from '../oidc/authorized-apps.js';

/** Rows under a header, each column as wide as its widest cell; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) => cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

/** "title: none", or "title:" over a table of the rows. */
export function section(title: string, header: string[], rows: string[][]): string {
  return rows.length === 0 ? `${title}: none` : `${title}:\n${table(header, rows)}`;
}

/** Label: value lines, labels aligned. */
export function fields(pairs: [string, string][]): string {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

export const json = (value: unknown): string => JSON.stringify(value, null, 2);

export const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

/** "ended 3 grants (Calendar: 2, Mail: 1)", or "no grants to end". */
export function endedText(revoked: ApplicationRevoked[], label: (entry: ApplicationRevoked) => string): string {
  const total = grantCount(revoked);
  if (total === 0) return 'no grants to end';
  return `ended ${total} grant${total === 1 ? '' : 's'} (${revoked.map((entry) => `${label(entry)}: ${entry.grantIds.length}`).join(', ')})`;
}

/**
 * What a bench run prints: its header line (when, on what, how), the table of its results with
 * each row's ratio to its anchor, and the lines after the table. Pure functions of the results,
 * so the same text goes to the terminal and, with `--markdown`, into a page
 * (test/bench/markdown.test.ts).
 *
 * @example console.log(resultsTable(results, argon2Rate, (row) => ROWS[row]?.title ?? row));
 */
import os from 'node:os';
import { fmt, fmtRatio, formatTable, ratio } from './stats.mjs';

export const COLUMNS = ['target', 'row', 'req/s', 'p50 ms', 'p99 ms', 'vs anchor', 'PG xacts/req', 'Redis cmds/req', 'CPU µs/req', 'RSS MB', 'notes'];

/** Each row's anchor: P's figure for the same row, the argon2id ceiling for logins, the exchange for a 429 and for private_key_jwt's exchange. */
export function anchorOf(result, results, argon2Rate) {
  const sameTarget = (row) => results.find((r) => r.target === result.target && r.row === row);
  if (result.target.startsWith('P:')) return '1.00 P';
  if (!result.target.startsWith('this service')) return '';
  if (result.row === 'login') return `${fmtRatio(ratio(result.perSecond, argon2Rate), '×')} argon2id (${fmt(argon2Rate)}/s)`;
  if (result.row === '429') {
    const exchange = sameTarget('exchange');
    return exchange ? `${fmt(ratio(exchange.cpuUs, result.cpuUs), 1)}× cheaper (CPU) than an exchange` : '';
  }
  if (result.row === 'exchange-pkjwt') {
    const exchange = sameTarget('exchange');
    return exchange ? `${fmt(ratio(result.perSecond, exchange.perSecond), 2)}× a secret exchange's req/s, ${fmt(ratio(result.cpuUs, exchange.cpuUs), 2)}× its CPU` : '';
  }
  const p = results.find((r) => r.target.startsWith('P:') && r.row === result.row);
  return p ? fmtRatio(ratio(result.perSecond, p.perSecond), 'P') : '';
}

/** The line above the table: the time, the machine, Node, the load and the repetitions. */
export function headerLine(settings, { date = new Date(), cpus = os.cpus(), node = process.version } = {}) {
  return `${date.toISOString()} · ${cpus.length} × ${cpus[0]?.model ?? 'CPU'} · node ${node} · `
    + `${settings.load}, ${settings.connections} connections · warm-up ${settings.warmup} s, then the median of ${settings.runs} × ${settings.seconds} s${settings.quick ? ' (--quick)' : ''}`;
}

/** The table, one line per result; `titleOf(row)` names a row as the table shows it. */
export function resultsTable(results, argon2Rate, titleOf = (row) => row) {
  return formatTable(COLUMNS, results.map((r) => [
    r.target, titleOf(r.row), fmt(r.perSecond), fmt(r.p50, 1), fmt(r.p99, 1), anchorOf(r, results, argon2Rate),
    fmt(r.pg, 1), fmt(r.redis, 1), fmt(r.cpuUs), fmt(r.rssMb), r.notes.join('; '),
  ]));
}

/** The lines after the table: each service's RSS right after start, in MB. */
export function startRssLines(startRss) {
  return Object.entries(startRss).map(([label, mb]) => `RSS of ${label} right after start (one login and one exchange): ${fmt(mb)} MB`);
}

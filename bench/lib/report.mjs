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

const PG = 'this service, Postgres + Redis';
const EMBEDDED = 'this service, embedded';

/**
 * docs/performance.md's targets, each read from this run's figures: `met`, `missed` (with the
 * figure), or `not measured` when the run lacks the row, the target or the load the target names.
 * Scale and webhook latency are measured by their own runs, so they are always `not measured` here.
 */
export function targetLines(results, argon2Rate, settings) {
  const find = (target, row) => results.find((r) => r.target === target && r.row === row);
  const p = (row) => results.find((r) => r.target.startsWith('P:') && r.row === row);
  const line = (name, verdict) => `${name}: ${verdict}`;
  const judged = (ok, figure) => `${ok ? 'met' : 'missed'} (${figure})`;
  const vsP = (target, row, least) => {
    const mine = find(target, row);
    const anchor = p(row);
    if (!mine || !anchor) return 'not measured';
    const value = ratio(mine.perSecond, anchor.perSecond);
    return judged(value >= least, fmtRatio(value, 'P'));
  };
  const p99 = (target, rows, most) => {
    if (settings.connections !== 32) return `not measured (${settings.connections} connections, not 32)`;
    const measured = rows.map((row) => find(target, row)).filter(Boolean);
    if (measured.length === 0) return 'not measured';
    return judged(measured.every((r) => r.p99 <= most), measured.map((r) => `${r.row} ${fmt(r.p99, 1)} ms`).join(', '));
  };
  const services = [...new Set(results.filter((r) => r.target.startsWith('this service')).map((r) => r.target))];
  const perService = (row, verdictOf) => {
    const measured = services.filter((target) => find(target, row));
    if (measured.length === 0) return 'not measured';
    const verdicts = measured.map((target) => verdictOf(find(target, row), find(target, 'exchange')));
    const ok = verdicts.every(([met]) => met);
    return `${ok ? 'met' : 'missed'} (${measured.map((target, i) => `${target.replace('this service, ', '')} ${verdicts[i][1]}`).join(', ')})`;
  };
  const pgRss = results.filter((r) => r.target === PG);
  return [
    line('Postgres + Redis: userinfo ≥ 0.8 P', vsP(PG, 'userinfo', 0.8)),
    line('Postgres + Redis: code exchange ≥ 0.7 P', vsP(PG, 'exchange', 0.7)),
    line('fresh login flows ≥ 0.7 × the argon2id verify rate', perService('login', (r) => [ratio(r.perSecond, argon2Rate) >= 0.7, fmtRatio(ratio(r.perSecond, argon2Rate), '×')])),
    line('silent authorize ≥ 1,000/s', perService('silent', (r) => [r.perSecond >= 1000, `${fmt(r.perSecond)}/s`])),
    line('p99 ≤ 50 ms at 32 connections, Postgres + Redis', p99(PG, ['userinfo', 'exchange'], 50)),
    line('embedded: userinfo ≥ 0.5 P', vsP(EMBEDDED, 'userinfo', 0.5)),
    line('embedded: code exchange ≥ 0.3 P', vsP(EMBEDDED, 'exchange', 0.3)),
    line('embedded: p99 ≤ 100 ms at 32 connections', p99(EMBEDDED, ['userinfo', 'exchange'], 100)),
    line('a 429 refusal ≥ 10× cheaper than a served token request', perService('429', (r, exchange) => (exchange
      ? [ratio(exchange.cpuUs, r.cpuUs) >= 10, `${fmt(ratio(exchange.cpuUs, r.cpuUs), 1)}×`] : [false, 'no exchange row to compare']))),
    line('RSS under the bench load on Postgres + Redis ≤ 200 MB', pgRss.length === 0 ? 'not measured'
      : judged(Math.max(...pgRss.map((r) => r.rssMb)) <= 200, `at most ${fmt(Math.max(...pgRss.map((r) => r.rssMb)))} MB`)),
    line('a webhook event at the receiver under a second', 'not measured (npm run bench:webhook-latency)'),
    line('scale: 1,000,000 live tokens of each kind within 10 % of a small store', 'not measured (--seed-tokens against a run without)'),
  ];
}

/** The lines after the table: each service's RSS right after start, in MB. */
export function startRssLines(startRss) {
  return Object.entries(startRss).map(([label, mb]) => `RSS of ${label} right after start (one login and one exchange): ${fmt(mb)} MB`);
}

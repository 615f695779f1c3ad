/**
 * What an A/B run prints (bench/lib/ab-plan.mjs takes the figures): each side's rounds folded
 * into one result per row for the main table, and the comparison table, one line per service
 * target and row, with a verdict. Pure functions of the figures (test/bench/ab-report.test.ts).
 *
 * The verdict is judged against the noise the run itself shows: a side's spread is how far its
 * own rounds moved, (highest − lowest) / median of its req/s. B is "same" as A when B's median
 * req/s differs from A's by no more than the larger of the two spreads; otherwise "faster" or
 * "slower". One round has no spread, so no verdict ("–").
 *
 * @example console.log(comparisonTable(figures, (row) => ROWS[row]?.title ?? row));
 */
import { fmt, fmtRatio, formatTable, median, ratio } from './stats.mjs';

export const AB_COLUMNS = ['target', 'row', 'A req/s', 'B req/s', 'B/A req/s', 'A p99 ms', 'B p99 ms', 'A CPU µs/req', 'B CPU µs/req', 'B/A CPU/req', 'spread', 'verdict'];

/** How far one side's figures moved between its rounds: (highest − lowest) / median; NaN for fewer than two. */
export function spread(values) {
  const figures = values.filter((value) => Number.isFinite(value));
  if (figures.length < 2) return NaN;
  return ratio(Math.max(...figures) - Math.min(...figures), median(figures));
}

/** B's req/s against A's over their rounds: { ratio (B/A of the medians), noise (the larger spread), word }. */
export function verdict(aPerSecond, bPerSecond) {
  const ratioBA = ratio(median(bPerSecond), median(aPerSecond));
  const noise = Math.max(spread(aPerSecond), spread(bPerSecond));
  if (!Number.isFinite(ratioBA) || !Number.isFinite(noise)) return { ratio: ratioBA, noise, word: '–' };
  if (Math.abs(ratioBA - 1) <= noise) return { ratio: ratioBA, noise, word: 'same' };
  return { ratio: ratioBA, noise, word: ratioBA > 1 ? 'faster' : 'slower' };
}

/** The figures grouped by service target and row, in the order first measured: [{ service, row, A: [...], B: [...] }]. */
export function comparisons(figures) {
  const lines = new Map();
  for (const figure of figures) {
    const key = JSON.stringify([figure.service, figure.row]);
    if (!lines.has(key)) lines.set(key, { service: figure.service, row: figure.row, A: [], B: [] });
    lines.get(key)[figure.side].push(figure);
  }
  return [...lines.values()];
}

const of = (figures, field) => figures.map((figure) => figure[field]);

/** The A/B table: per service target and row, each side's medians over its rounds, B/A, the spread judged against and the verdict. */
export function comparisonTable(figures, titleOf = (row) => row) {
  return formatTable(AB_COLUMNS, comparisons(figures).map(({ service, row, A, B }) => {
    const judged = verdict(of(A, 'perSecond'), of(B, 'perSecond'));
    const cpu = [median(of(A, 'cpuUs')), median(of(B, 'cpuUs'))];
    return [
      service, titleOf(row),
      fmt(median(of(A, 'perSecond'))), fmt(median(of(B, 'perSecond'))), fmtRatio(judged.ratio, ''),
      fmt(median(of(A, 'p99')), 1), fmt(median(of(B, 'p99')), 1),
      fmt(cpu[0]), fmt(cpu[1]), fmtRatio(ratio(cpu[1], cpu[0]), ''),
      Number.isFinite(judged.noise) ? `±${fmt(judged.noise * 100, 1)} %` : '–', judged.word,
    ];
  }));
}

/**
 * Each side's rounds of a row as one result of the main table (target "<service>, A"): the
 * medians of its rounds, the peak RSS of all of them, and their notes (see {@link roundNotes}).
 * Ordered by service, then side, then row, as first measured.
 */
export function sideResults(figures) {
  const order = (values) => [...new Set(values)];
  const services = order(of(figures, 'service'));
  const rows = order(of(figures, 'row'));
  const results = [];
  for (const service of services) {
    for (const side of ['A', 'B']) {
      for (const row of rows) {
        const rounds = figures.filter((f) => f.service === service && f.side === side && f.row === row);
        if (rounds.length === 0) continue;
        const medianOf = (field) => median(of(rounds, field));
        results.push({
          target: rounds[0].target, row,
          perSecond: medianOf('perSecond'), p50: medianOf('p50'), p99: medianOf('p99'),
          pg: medianOf('pg'), redis: medianOf('redis'), cpuUs: medianOf('cpuUs'),
          rssMb: Math.max(...of(rounds, 'rssMb')),
          notes: roundNotes(rounds),
        });
      }
    }
  }
  return results;
}

/** The notes of a side's rounds: one said in every round once, any other marked with its round ("round 2: …"). */
export function roundNotes(rounds) {
  const everywhere = (note) => rounds.every((round) => round.notes.includes(note));
  const notes = rounds.flatMap((round) => round.notes.map((note) => (everywhere(note) ? note : `round ${round.round}: ${note}`)));
  return [...new Set(notes)];
}

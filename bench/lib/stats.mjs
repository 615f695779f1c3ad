/**
 * The arithmetic of the benchmark table: medians of repeated figures, percentiles of latency
 * samples, ratios to an anchor, per-request costs, and the table itself. Pure functions, so a
 * unit test can pin them (test/bench/stats.test.ts).
 *
 * @example formatTable(['row', 'req/s'], [['userinfo', '2,050']]);
 */

/** The median of a list of numbers (the mean of the middle two for an even count); NaN when empty. */
export function median(values) {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The q-quantile (0..1) of latency samples by the nearest-rank method; NaN when empty. */
export function percentile(samples, q) {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1];
}

/** `value / anchor`, or NaN when either is missing or the anchor is zero. */
export function ratio(value, anchor) {
  if (!Number.isFinite(value) || !Number.isFinite(anchor) || anchor === 0) return NaN;
  return value / anchor;
}

/** A counter's growth spread over the requests that caused it; NaN without requests. */
export function perRequest(before, after, requests) {
  if (!Number.isFinite(before) || !Number.isFinite(after) || !(requests > 0)) return NaN;
  return (after - before) / requests;
}

/** The run whose req/s is the median of the runs (the middle one for 3): its p50 and p99 go with it. */
export function medianRun(runs) {
  if (runs.length === 0) return undefined;
  const sorted = [...runs].sort((a, b) => a.perSecond - b.perSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Formats a number for the table: thousands separators, `digits` decimals, "–" for NaN. */
export function fmt(value, digits = 0) {
  if (value === undefined || value === null || !Number.isFinite(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** A ratio for the table, "0.26 P" style; "–" when there is no anchor. */
export function fmtRatio(value, unit) {
  return Number.isFinite(value) ? `${value.toFixed(2)} ${unit}`.trim() : '–';
}

/** A Markdown table (header row, separator, rows), columns padded so it also reads as plain text. */
export function formatTable(header, rows) {
  const widths = header.map((cell, i) => Math.max(String(cell).length, ...rows.map((row) => String(row[i] ?? '').length)));
  const line = (cells) => `| ${cells.map((cell, i) => String(cell ?? '').padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

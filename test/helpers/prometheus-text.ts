/**
 * Parses the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format) with the
 * reference parser, the Prometheus project's Python client (`prometheus_client`,
 * `text_string_to_metric_families`, through prometheus_families.py): the families and values
 * the tests assert are the ones it read. A line it cannot parse throws, with its message.
 *
 * That parser is lax by its own account ("successful parsing does not imply that the parsed text
 * meets the specification"), so what it lets through is checked on its result: the text ends with
 * a newline; every sample sits under its family's TYPE (the parser makes a stray sample an
 * untyped family of its own, and so a split family shows as a name seen twice); histograms are
 * well formed (cumulative buckets ending at `+Inf`, equal to `_count`, and a `_sum`); no TYPE
 * is given twice (the parser would merge the two).
 *
 * Needs a python3 that has prometheus_client: Debian's python3-prometheus-client (.ci/run
 * installs it); tests that parse are wrapped in {@link describeWithParser}, and parsing anywhere
 * else throws (test/helpers/system-tool.ts).
 *
 * @example const families = await parsePrometheusText(await res.text()); families.get('up')!.samples
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describeWith, program, PROMETHEUS_PARSER } from './system-tool.js';

export interface Sample { name: string; labels: Record<string, string>; value: number }
/** A family as the reference parser names it: a counter without its `_total` (its samples keep it). */
export interface Family { name: string; type: string; help?: string; samples: Sample[] }

const SCRIPT = fileURLToPath(new URL('./prometheus_families.py', import.meta.url));
/** The types prom-client writes; the parser's `unknown` is a sample that had no TYPE. */
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary']);

/** `describe` for tests that parse scrapes: skipped without the reference parser (failing under CI). */
export const describeWithParser = describeWith(PROMETHEUS_PARSER);

function referenceParse(text: string): Promise<{ name: string; type: string; help: string; samples: { name: string; labels: Record<string, string>; value: number | string }[] }[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(program(PROMETHEUS_PARSER), [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(stdout));
      else reject(new Error(`the Prometheus parser refused the text: ${stderr.trim().split('\n').at(-1)}`));
    });
    child.stdin.end(text);
  });
}

const number = (value: number | string) => (typeof value === 'number' ? value : value === 'NaN' ? Number.NaN : value === '+Inf' ? Infinity : -Infinity);

function checkHistogram(family: Family) {
  const series = new Map<string, Sample[]>();
  for (const sample of family.samples.filter((s) => s.name === `${family.name}_bucket`)) {
    const { le, ...rest } = sample.labels;
    if (le === undefined) throw new Error(`${family.name}_bucket without le`);
    const key = JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), sample]);
  }
  for (const [key, buckets] of series) {
    const bounds = buckets.map((b) => Number(b.labels.le === '+Inf' ? Infinity : b.labels.le));
    for (let i = 1; i < buckets.length; i += 1) {
      if (bounds[i]! <= bounds[i - 1]! || buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${family.name}${key}: buckets not cumulative`);
    }
    if (bounds.at(-1) !== Infinity) throw new Error(`${family.name}${key}: no +Inf bucket`);
    const count = family.samples.find((s) => s.name === `${family.name}_count` && JSON.stringify(s.labels) === key);
    if (!count || count.value !== buckets.at(-1)!.value) throw new Error(`${family.name}${key}: _count differs from the +Inf bucket`);
    if (!family.samples.some((s) => s.name === `${family.name}_sum` && JSON.stringify(s.labels) === key)) throw new Error(`${family.name}${key}: no _sum`);
  }
}

/** The families of an exposition, by name, as the reference parser read them; throws on anything malformed. */
export async function parsePrometheusText(text: string): Promise<Map<string, Family>> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  // The parser merges a TYPE given twice into one family: refuse it here.
  const typed = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!);
  const twice = typed.find((name, index) => typed.indexOf(name) !== index);
  if (twice) throw new Error(`TYPE given twice: ${twice}`);
  const families = new Map<string, Family>();
  for (const parsed of await referenceParse(text)) {
    const family: Family = { name: parsed.name, type: parsed.type, help: parsed.help, samples: parsed.samples.map((s) => ({ ...s, value: number(s.value) })) };
    if (!TYPES.has(family.type)) throw new Error(`${family.name}: a sample without its TYPE (read as ${family.type})`);
    if (families.has(family.name)) throw new Error(`family ${family.name} is split or given twice`);
    if (family.type === 'histogram') checkHistogram(family);
    families.set(family.name, family);
  }
  return families;
}

/** The value of one sample, by its name and labels (those given must match); undefined when absent. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    const sample = family.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (sample) return sample.value;
  }
  return undefined;
}

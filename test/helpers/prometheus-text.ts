/**
 * A strict parser of the Prometheus text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format): every line
 * must be a HELP, a TYPE, a comment, a blank line or a sample; anything else throws, naming the
 * line. Checks too that each sample belongs to a family whose TYPE came first, that a family is
 * not split, and that histograms are well formed (cumulative buckets, `+Inf` = `_count`).
 *
 * @example const families = parsePrometheusText(await res.text()); families.get('up')!.samples
 */
export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Family { name: string; type: string; help?: string; samples: Sample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*';
const VALUE = String.raw`(?:"(?:[^"\\\n]|\\[\\"n])*")`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{((?:${LABEL}=${VALUE})(?:,${LABEL}=${VALUE})*,?)?\\})? (\\S+)(?: (-?\\d+))?$`);
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function number(text: string, line: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return Number.NaN;
  if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(text)) throw new Error(`bad value "${text}" in: ${line}`);
  return Number(text);
}

function labelsOf(text: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of (text ?? '').matchAll(new RegExp(`(${LABEL})=(${VALUE})`, 'g'))) {
    if (match[1]! in labels) throw new Error(`label ${match[1]} repeated in {${text}}`);
    labels[match[1]!] = match[2]!.slice(1, -1).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** The family a sample name belongs to (histogram and summary samples carry suffixes). */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  if (families.has(name)) return families.get(name);
  const base = name.replace(/_(bucket|sum|count)$/, '');
  const family = families.get(base);
  return family && (family.type === 'histogram' || family.type === 'summary') ? family : undefined;
}

function checkHistogram(family: Family) {
  const series = new Map<string, Sample[]>();
  for (const sample of family.samples.filter((s) => s.name === `${family.name}_bucket`)) {
    const { le, ...rest } = sample.labels;
    if (le === undefined) throw new Error(`${family.name}_bucket without le`);
    const key = JSON.stringify(rest);
    series.set(key, [...(series.get(key) ?? []), sample]);
  }
  for (const [key, buckets] of series) {
    const bounds = buckets.map((b) => number(b.labels.le!, key));
    for (let i = 1; i < buckets.length; i += 1) {
      if (bounds[i]! <= bounds[i - 1]! || buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${family.name}${key}: buckets not cumulative`);
    }
    if (bounds.at(-1) !== Infinity) throw new Error(`${family.name}${key}: no +Inf bucket`);
    const count = family.samples.find((s) => s.name === `${family.name}_count` && JSON.stringify(s.labels) === key);
    if (!count || count.value !== buckets.at(-1)!.value) throw new Error(`${family.name}${key}: _count differs from the +Inf bucket`);
    if (!family.samples.some((s) => s.name === `${family.name}_sum` && JSON.stringify(s.labels) === key)) throw new Error(`${family.name}${key}: no _sum`);
  }
}

export function parsePrometheusText(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  const closed = new Set<string>();
  let current: Family | undefined;
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    const help = new RegExp(`^# HELP (${NAME}) (.*)$`).exec(line);
    const type = new RegExp(`^# TYPE (${NAME}) (\\S+)$`).exec(line);
    if (help) {
      helps.set(help[1]!, help[2]!);
      continue;
    }
    if (type) {
      if (!TYPES.has(type[2]!)) throw new Error(`unknown type in: ${line}`);
      if (families.has(type[1]!)) throw new Error(`TYPE given twice: ${line}`);
      if (current) closed.add(current.name);
      current = { name: type[1]!, type: type[2]!, help: helps.get(type[1]!), samples: [] };
      families.set(current.name, current);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a valid exposition line: ${line}`);
    const family = familyOf(sample[1]!, families);
    if (!family) throw new Error(`sample before its TYPE: ${line}`);
    if (family !== current || closed.has(family.name)) throw new Error(`family ${family.name} is split: ${line}`);
    family.samples.push({ name: sample[1]!, labels: labelsOf(sample[2]), value: number(sample[3]!, line) });
  }
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

/** The value of one sample, by name and labels (those given must match); undefined when absent. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = familyOf(name, families);
  const sample = family?.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return sample?.value;
}

/**
 * A fresh machine has Node, PostgreSQL and Redis, and `npm test` passes there: a test reaches a
 * program beyond them (a Debian package: the reference Prometheus parser, Chromium, wrk,
 * pgbouncer, redis-sentinel, nginx, openssl, git, docker) only through
 * test/helpers/system-tool.ts, which skips with one line outside CI and fails under CI. Read from
 * the sources, so a way around it fails here on every machine, not on the first one that lacks
 * the program:
 * - a helper never names a program: it asks `program(TOOL)`;
 * - a test file that reaches a tool (starts its program, or mentions its `TOOL`, itself or
 *   through the helpers it imports) wraps tests in `describeWith(TOOL)` or a helper's wrapper of it;
 * - the bare pass (scripts/test-without-tools.mjs) runs every such file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from '@jest/globals';
import { ROOT } from '../helpers/build.js';
import { filesTouchingTools, SYSTEM_TOOLS } from '../helpers/system-tools.mjs';
import type { SystemToolName } from '../helpers/system-tools.mjs';

/** The door itself, and this file (its table of programs is data). */
const DOOR = new Set(['test/helpers/system-tool.ts', 'test/helpers/system-tools.mjs', 'test/helpers/system-tools.d.mts', 'test/architecture/system-tools.test.ts']);
const NAMES = Object.keys(SYSTEM_TOOLS) as SystemToolName[];

function sources(dir = 'test'): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const at = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sources(at);
    return /\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.mts') && !DOOR.has(at) ? [at] : [];
  });
}

/** The code without its comments (a `//` after a space or at a line's start; `http://` stays). */
const code = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');
const programs = (name: SystemToolName) => SYSTEM_TOOLS[name].programs.map(escape).join('|');
/** A string that is a program's name or path: 'openssl', "/usr/bin/chromium", `git`. */
const NAMED = new Map(NAMES.map((name) => [name, new RegExp(`(['"\`])(?:/[\\w./-]*/)?(?:${programs(name)})\\1`)]));
/**
 * In a test file, where a program is started: its path anywhere, or its name as the command of a
 * process or a browser ('pgbouncer' as a setting's value, or 'wrk' as the bench's driver, is not).
 */
const STARTED = new Map(NAMES.map((name) => [name, new RegExp([
  `(['"\`])/[\\w./-]*/(?:${programs(name)})\\1`,
  `\\b(?:spawn|spawnSync|execFile|execFileSync|exec|execSync|fork)\\(\\s*(['"\`])(?:${programs(name)})\\2`,
  `\\bexecutablePath:\\s*(['"\`])(?:${programs(name)})\\3`,
].join('|'))]));

/** The modules under test/ that `file` imports for their values (not `import type`), as repository paths. */
function imports(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\b)(?:[^'"]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => match[1]!);
  return specifiers.map((specifier) => {
    const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
    return resolved.endsWith('.js') && fs.existsSync(path.join(ROOT, resolved.replace(/\.js$/, '.ts'))) ? resolved.replace(/\.js$/, '.ts') : resolved;
  }).filter((resolved) => resolved.startsWith('test/'));
}

const files = sources();
const texts = new Map(files.map((file) => [file, code(file)]));
/** `describeWithParser` → PROMETHEUS_PARSER: the wrappers helpers export. */
const wrappers = new Map([...texts.values()].flatMap((text) => [...text.matchAll(/export const (\w+) = describeWith\((\w+)\)/g)].map((match) => [match[1]!, match[2]! as SystemToolName] as const)));

/** The tools `file` reaches by itself: a program it names (a helper) or starts (a test file), a TOOL it mentions. */
function reachedHere(file: string): Set<SystemToolName> {
  const text = texts.get(file) ?? '';
  const programIn = file.endsWith('.test.ts') ? STARTED : NAMED;
  return new Set(NAMES.filter((name) => programIn.get(name)!.test(text) || new RegExp(`\\b${name}\\b`).test(text)));
}

/** The tools `file` reaches, with the helper each is reached through. */
function reached(file: string, seen = new Set<string>()): Map<SystemToolName, string> {
  const found = new Map([...reachedHere(file)].map((name) => [name, file] as const));
  seen.add(file);
  for (const helper of imports(file, texts.get(file) ?? '')) {
    if (seen.has(helper) || !texts.has(helper)) continue;
    for (const [name] of reached(helper, seen)) if (!found.has(name)) found.set(name, helper);
  }
  return found;
}

/** The tools whose `describeWith` the file calls, directly or through a wrapper. */
function declared(file: string): Set<SystemToolName> {
  const text = texts.get(file)!;
  const direct = [...text.matchAll(/\bdescribeWith\((\w+)\)/g)].map((match) => match[1]! as SystemToolName);
  const wrapped = [...wrappers].filter(([wrapper]) => new RegExp(`\\b${wrapper}\\(`).test(text)).map(([, name]) => name);
  return new Set([...direct, ...wrapped]);
}

const testFiles = files.filter((file) => file.endsWith('.test.ts'));

test('it reads the tree: the test files, the helpers, the wrappers', () => {
  expect(testFiles.length).toBeGreaterThan(100);
  expect(files).toContain('test/helpers/prometheus-text.ts');
  expect(wrappers.get('describeWithParser')).toBe('PROMETHEUS_PARSER');
  expect(reached('test/ops/metrics.test.ts').get('PROMETHEUS_PARSER')).toBe('test/helpers/prometheus-text.ts');
});

test('no helper names a system program: it asks program(TOOL) inside describeWith(TOOL)', () => {
  const named = files.filter((file) => !file.endsWith('.test.ts')).flatMap((file) => NAMES.filter((name) => NAMED.get(name)!.test(texts.get(file)!)).map((name) => `${file} names ${SYSTEM_TOOLS[name].programs.join('/')}`));
  expect(named).toEqual([]);
});

test('a test file that reaches a system tool wraps its tests in describeWith(TOOL)', () => {
  const unwrapped = testFiles.flatMap((file) => {
    const wraps = declared(file);
    return [...reached(file)].filter(([name]) => !wraps.has(name))
      .map(([name, through]) => `${file} reaches ${SYSTEM_TOOLS[name].tool}${through === file ? '' : ` (through ${through})`} outside describeWith(${name})`);
  });
  expect(unwrapped).toEqual([]);
});

test('the bare pass runs every test file that reaches a system tool', () => {
  const bare = new Set(filesTouchingTools());
  expect(testFiles.filter((file) => reached(file).size > 0 && !bare.has(file))).toEqual([]);
});

/**
 * The image builds as committed: the Dockerfile's build stage is replayed in a scratch folder that
 * holds exactly what its COPY lines put in the image at each point (the build context less
 * .dockerignore), so a build step that reads a file not copied before it fails here as it would
 * in `docker build`. Derived from the Dockerfile and package.json, not from a list:
 * - `npm install` / `npm ci` runs the root package's install scripts (preinstall, install,
 *   postinstall, preprepare, prepare, postprepare): node_modules is this checkout's, linked where
 *   the install would have made it, so nothing is downloaded;
 * - `npm run X` runs X with its pre and post scripts, as npm does;
 * - `node FILE` must find FILE copied (not run: the one there prunes node_modules, here shared);
 * - anything else (apt-get, npm prune) changes the system or the dependencies, and is not replayed.
 * scripts/compose-smoke.sh builds the image for real.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from '@jest/globals';
import { ROOT } from '../helpers/build.js';

interface Instruction { keyword: string; args: string }

/** Dockerfile instructions, continuation lines joined and comments dropped, grouped by FROM. */
function stages(text: string): Instruction[][] {
  const result: Instruction[][] = [];
  for (const line of text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line)!;
    if (keyword.toUpperCase() === 'FROM') result.push([]);
    result.at(-1)?.push({ keyword: keyword.toUpperCase(), args });
  }
  return result;
}

/**
 * .dockerignore as Docker reads it: each pattern is matched against the whole path from the
 * context's root (`*` within a segment, `**` across them), an excluded folder excludes what it
 * holds, and a later `!pattern` takes a path back.
 * @see https://docs.docker.com/build/concepts/context/#dockerignore-files
 */
function dockerignore(text: string): (relative: string) => boolean {
  const rules = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#')).map((line) => {
    const negated = line.startsWith('!');
    const pattern = path.posix.normalize((negated ? line.slice(1) : line).replace(/^\/+/, ''));
    const source = pattern.split(/(\*\*\/?|\*|\?)/).map((part) => {
      if (part === '**/' ) return '(?:.*/)?';
      if (part === '**') return '.*';
      if (part === '*') return '[^/]*';
      if (part === '?') return '[^/]';
      return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    }).join('');
    return { negated, regex: new RegExp(`^${source}$`) };
  });
  return (relative) => {
    const parts = relative.split('/');
    let excluded = false;
    for (let i = 1; i <= parts.length; i += 1) {
      const prefix = parts.slice(0, i).join('/');
      for (const rule of rules) if (rule.regex.test(prefix)) excluded = !rule.negated;
      if (excluded && i < parts.length) return true; // a folder left out takes what it holds with it
    }
    return excluded;
  };
}

const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
const ignored = dockerignore(fs.existsSync(path.join(ROOT, '.dockerignore')) ? fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8') : '');
const buildStage = stages(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))
  .find((stage) => stage.some((i) => i.keyword === 'RUN' && /\bnpm (ci|install|i)\b/.test(i.args)));

/** The package.json scripts a command runs, in npm's order; undefined when it runs none of ours. */
function lifecycle(command: string): string[] | undefined {
  if (/^npm (install|i|ci)\b/.test(command)) return ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'];
  const run = /^npm (?:run|run-script) (\S+)/.exec(command);
  return run ? [`pre${run[1]}`, run[1]!, `post${run[1]}`] : undefined;
}

describe('Dockerfile build stage, replayed on what it copies', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-docker-build-'));
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  test('every build step finds what it reads among the files copied before it', () => {
    expect(buildStage).toBeDefined();
    let workdir = '/';
    const inImage = (target: string) => path.join(scratch, path.posix.resolve(workdir, target));
    const ran: string[] = [];
    for (const { keyword, args } of buildStage!) {
      if (keyword === 'WORKDIR') workdir = path.posix.resolve(workdir, args);
      if (keyword === 'COPY' && !args.includes('--from')) {
        const words = args.split(/\s+/).filter((word) => !word.startsWith('--'));
        const destination = words.pop()!;
        const intoFolder = destination.endsWith('/') || words.length > 1;
        for (const source of words) {
          if (/[*?[]/.test(source)) throw new Error(`COPY ${source}: wildcards are not replayed here`);
          const from = path.join(ROOT, source);
          const relative = path.relative(ROOT, from).split(path.sep).join('/');
          expect({ source, copied: relative === '' || (fs.existsSync(from) && !ignored(relative)) }).toEqual({ source, copied: true });
          const to = fs.statSync(from).isDirectory() || !intoFolder ? inImage(destination) : path.join(inImage(destination), path.basename(from));
          fs.cpSync(from, to, {
            recursive: true,
            filter: (file) => { const rel = path.relative(ROOT, file).split(path.sep).join('/'); return rel === '' || !ignored(rel); },
          });
        }
      }
      if (keyword !== 'RUN') continue;
      for (const command of args.split(/\s*(?:&&|;)\s*/)) {
        const file = /^node (\S+\.[cm]?js)\b/.exec(command)?.[1];
        if (file) expect({ command, copied: fs.existsSync(inImage(file)) }).toEqual({ command, copied: true });
        const names = lifecycle(command);
        if (!names) continue;
        const cwd = inImage('.');
        if (/^npm (install|i|ci)\b/.test(command) && !fs.existsSync(path.join(cwd, 'node_modules'))) {
          fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(cwd, 'node_modules'), 'dir');
        }
        for (const name of names.filter((n) => scripts[n] !== undefined)) {
          try {
            execFileSync('sh', ['-c', scripts[name]!], {
              cwd,
              env: { ...process.env, PATH: `${path.join(cwd, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH}` },
              stdio: 'pipe',
            });
          } catch (error) {
            const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
            throw new Error(`RUN ${command}: its script "${name}" (${scripts[name]}) failed on the files copied so far:\n${stderr ?? ''}${stdout ?? ''}`);
          }
          ran.push(name);
        }
      }
    }
    // It replayed something: the install's postinstall and the build at least.
    expect(ran).toEqual(expect.arrayContaining(['postinstall', 'build']));
  }, 240_000);
});

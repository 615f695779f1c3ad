/**
 * `--against <git-ref>`: another build of the service to run beside this checkout's. The ref is
 * checked out into a temporary git worktree (`git worktree add --detach`), given this
 * checkout's node_modules (a symlink: both sides run on the same dependencies), then what a
 * fresh clone's `npm install` would generate (the ref's own `postinstall`: the Prisma client,
 * the compiled pages) and its `npm run build`. The service then starts from that folder
 * (`startService(mode, { root })`).
 *
 * The worktree goes when the bench is done with it (`remove()`), and also when the process exits
 * early: on failure, on Ctrl-C (SIGINT), SIGTERM or SIGHUP. A build step still running then is
 * stopped with its process group.
 *
 * @example const other = await buildAgainst(commit, { log }); … other.remove();
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './processes.mjs';

const git = (args, cwd) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The commit `ref` names in the repository of `root`, or undefined when it names none. */
export function resolveRef(ref, root = ROOT) {
  if (!ref || ref.startsWith('-')) return undefined;
  try {
    return git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], root) || undefined;
  } catch {
    return undefined;
  }
}

/** `git describe --always --dirty` of `root`, or undefined outside a git checkout. */
export function describeBuild(root = ROOT) {
  try {
    return git(['describe', '--always', '--dirty'], root);
  } catch {
    return undefined;
  }
}

const SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };
const dependencies = (file) => {
  const { dependencies: deps, devDependencies: dev } = JSON.parse(fs.readFileSync(file, 'utf8'));
  return JSON.stringify({ deps, dev });
};

/** Checks `commit` out beside this checkout and builds it; resolves with { dir, remove() }. */
export async function buildAgainst(commit, { root = ROOT, log = () => {} } = {}) {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'oauth-bench-against-'));
  const dir = path.join(parent, 'checkout');
  let step; // the build step running now, in its own process group
  let removed = false;
  const onSignal = (signal) => {
    log(`${signal}: removing the worktree ${dir}`);
    process.exit(SIGNALS[signal]); // the exit handler removes it
  };
  /** Removes the worktree and its folder; safe to call more than once. */
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    for (const signal of Object.keys(SIGNALS)) process.off(signal, onSignal);
    if (step) {
      try {
        process.kill(-step.pid, 'SIGKILL');
      } catch { /* already gone */ }
    }
    try {
      git(['worktree', 'remove', '--force', dir], root);
    } catch { /* not added yet, or half made: the folder goes below and prune forgets it */ }
    fs.rmSync(parent, { recursive: true, force: true }); // unlinks the node_modules symlink, never its target
    try {
      git(['worktree', 'prune'], root);
    } catch { /* nothing to prune */ }
  };
  process.on('exit', remove);
  for (const signal of Object.keys(SIGNALS)) process.on(signal, onSignal);

  /** Runs one build step in the worktree; rejects with its output's tail when it fails. */
  const run = (command, args) => new Promise((resolve, reject) => {
    // Without the calling npm's package variables: the step is the ref's own, from its own folder.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && name !== 'INIT_CWD'));
    step = spawn(command, args, { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    step.stdout.setEncoding('utf8').on('data', (chunk) => { output += chunk; });
    step.stderr.setEncoding('utf8').on('data', (chunk) => { output += chunk; });
    step.on('error', reject);
    step.on('close', (code, signal) => {
      step = undefined;
      if (code === 0) resolve();
      else reject(new Error(`--against: \`${[command, ...args].join(' ')}\` failed in ${dir} (${code ?? signal}):\n${output.slice(-3000)}`));
    });
  });

  try {
    log(`--against: checking ${commit.slice(0, 7)} out into ${dir}`);
    git(['worktree', 'add', '--detach', dir, commit], root);
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    if (dependencies(path.join(dir, 'package.json')) !== dependencies(path.join(root, 'package.json'))) {
      log('--against: its package.json lists other dependencies than this checkout\'s; it runs on this checkout\'s node_modules');
    }
    const { scripts = {} } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    if (scripts.postinstall) {
      log(`--against: npm run postinstall (${scripts.postinstall})`);
      await run('npm', ['run', '--silent', 'postinstall']);
    }
    log('--against: npm run build');
    await run('npm', ['run', '--silent', 'build']);
    if (!fs.existsSync(path.join(dir, 'dist', 'launch.cjs'))) throw new Error(`--against: ${commit.slice(0, 7)} built no dist/launch.cjs, which the bench starts`);
    return { dir, remove };
  } catch (error) {
    remove();
    throw error;
  }
}

/**
 * Where a server's CPU time went, from the `.cpuprofile` files Node's `--cpu-prof` writes at exit
 * (`npm run bench -- --cpu-prof dir`): self time grouped by package (or by this service's own
 * file under dist/), then the functions with the most self time.
 *
 * @example console.log(summariseProfiles('/tmp/prof/pg'));
 */
import fs from 'node:fs';
import path from 'node:path';

/** What a profile frame belongs to: an npm package, a file of ours, Node's internals, or the VM's own buckets. */
export function ownerOf(url, functionName) {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [first, second] = url.slice(modules + '/node_modules/'.length).split('/');
    return first.startsWith('@') ? `${first}/${second}` : first;
  }
  if (url.startsWith('node:')) return 'node: internals';
  const dist = url.lastIndexOf('/dist/');
  return dist >= 0 ? `service: ${url.slice(dist + 1)}` : url;
}

/** Self time (µs) per node id of one profile, counting samples taken `fromMs`–`toMs` after it started. */
function selfTimes(profile, fromMs = 0, toMs = Infinity) {
  const times = new Map();
  let at = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at >= fromMs * 1000 && at <= toMs * 1000) times.set(id, (times.get(id) ?? 0) + delta);
  });
  return times;
}

/**
 * { total, byOwner: Map, byFunction: Map } in µs over the profiles in `dir`, idle time left out;
 * with `window` ({ pid, fromMs, toMs }), only that process's samples in that window of its life.
 */
export function readProfiles(dir, window) {
  const byOwner = new Map();
  const byFunction = new Map();
  let total = 0;
  // Node names a profile CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile
  const mine = (name) => !window || name.split('.')[3] === String(window.pid);
  for (const file of fs.readdirSync(dir).filter((name) => name.endsWith('.cpuprofile') && mine(name))) {
    const profile = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    const times = selfTimes(profile, window?.fromMs, window?.toMs);
    for (const node of profile.nodes) {
      const us = times.get(node.id) ?? 0;
      const { functionName, url, lineNumber } = node.callFrame;
      if (!us || functionName === '(idle)') continue;
      const owner = ownerOf(url, functionName);
      const fn = `${functionName || '(anonymous)'} ${owner}${url ? `:${lineNumber + 1}` : ''}`;
      total += us;
      byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    }
  }
  return { total, byOwner, byFunction };
}

const share = (us, total) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;

/** The summary as text: the top `owners` owners and `functions` functions by self time. */
export function summariseProfiles(dir, { owners = 20, functions = 25, window } = {}) {
  const { total, byOwner, byFunction } = readProfiles(dir, window);
  if (!total) return `no samples in ${dir}`;
  const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => `${share(us, total)}  ${name}`);
  return [`busy CPU ${(total / 1e6).toFixed(1)} s; self time by owner:`, ...top(byOwner, owners), '', 'functions with the most self time:', ...top(byFunction, functions)].join('\n');
}

// `node bench/lib/profile-summary.mjs <dir>` summarises profiles written by an earlier run.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  console.log(summariseProfiles(process.argv[2] ?? '.'));
}

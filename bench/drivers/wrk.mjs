/**
 * Load driver: Debian's `wrk` (C, one thread), the load generator the bench prefers.
 * It costs the machine a fraction of what autocannon (Node) does per request, so on two cores
 * the server under test and its stores are not starved by the load they are measured with.
 * Takes the same spec as `cannon.mjs` and answers the same JSON line:
 * { requests, wasted, served, perSecond, p50, p99, seconds, statuses, errors, exhausted }.
 *
 * The request, the pool of fresh values (one per request) and the recycling of rotated refresh
 * tokens are a Lua script written for the run; wrk stops when the pool runs out, so only what
 * came before counts. p50 and p99 are wrk's, over every answer of the run.
 *
 * Spec (argv[2], JSON): { url, connections, seconds, request: { method, path, headers, body },
 *   expect: [status…], pool?: { file, body: 'code={value}&…', recycle?: 'refresh_token', raw?: true } }
 * (`raw`: each value is already form-encoded, several fields at once: sent as it is.)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const spec = JSON.parse(process.argv[2]);

/** A Lua string literal of any text (long brackets cannot hold every value; this can). */
const lua = (text) => `"${[...Buffer.from(String(text), 'utf8')].map((byte) => `\\${byte}`).join('')}"`;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-'));
const script = path.join(dir, 'run.lua');
const lines = [
  `wrk.method = ${lua(spec.request.method)}`,
  `wrk.path = ${lua(spec.request.path)}`,
  ...Object.entries(spec.request.headers ?? {}).map(([name, value]) => `wrk.headers[${lua(name)}] = ${lua(value)}`),
  spec.request.body === undefined ? '' : `wrk.body = ${lua(spec.request.body)}`,
  `local expected = { ${spec.expect.map((status) => `[${Number(status)}] = true`).join(', ')} }`,
  // The thread's own clock: a run cut short by an empty pool counts only its own seconds.
  'local ffi = require("ffi")',
  'ffi.cdef[[ typedef struct { long sec; long usec; } bench_timeval; int gettimeofday(bench_timeval *tv, void *tz); ]]',
  'local function now() local tv = ffi.new("bench_timeval"); ffi.C.gettimeofday(tv, nil); return tonumber(tv.sec) + tonumber(tv.usec) / 1e6 end',
  'started = 0',
  'stopped = 0',
  'function init() started = now() end',
  'statuses = {}',
  'served = 0',
  'wasted = 0',
  'exhausted = false',
  'local threads = {}',
  'function setup(thread) table.insert(threads, thread) end',
];
if (spec.pool) {
  const values = JSON.parse(fs.readFileSync(spec.pool.file, 'utf8'));
  const poolFile = path.join(dir, 'pool.txt');
  fs.writeFileSync(poolFile, values.map((value) => (spec.pool.raw ? value : encodeURIComponent(value))).join('\n'));
  const [before, after] = spec.pool.body.split('{value}');
  lines.push(
    'local pool, next = {}, 1',
    `for line in io.lines(${lua(poolFile)}) do table.insert(pool, line) end`,
    `local before, after = ${lua(before)}, ${lua(after ?? '')}`,
    spec.pool.recycle
      // A refresh token rotates: the last answer's token is the next request of that chain.
      ? 'local function take() return table.remove(pool) end'
      : 'local function take() local value = pool[next]; next = next + 1; return value end',
    // wrk 4.1 calls request() once per thread before it connects and never sends that one.
    'local primed = false',
    'function request()',
    '  if not primed then primed = true; return wrk.format(nil, nil, nil, before .. "unsent" .. after) end',
    '  local value = take()',
    // Out of fresh values: stop this thread and tell the driver, which ends wrk's timed wait.
    '  if value == nil and not exhausted then exhausted = true; stopped = now(); wrk.thread:stop(); io.write("WRK-EXHAUSTED\\n"); io.flush() end',
    '  if value == nil then value = "pool-exhausted" end',
    '  return wrk.format(nil, nil, nil, before .. value .. after)',
    'end',
  );
  if (spec.pool.recycle) {
    lines.push(
      `local recycle = ${lua(`"${spec.pool.recycle}":"([^"]+)"`)}`,
      'local function encode(text) return (text:gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", string.byte(c)) end)) end',
      'local function keep(status, body) if status == 200 then local value = body:match(recycle); if value then table.insert(pool, encode(value)) end end end',
    );
  }
}
lines.push(
  'function response(status, headers, body)',
  spec.pool?.recycle ? '  keep(status, body)' : '',
  '  if exhausted then wasted = wasted + 1; return end',
  '  statuses[status] = (statuses[status] or 0) + 1',
  '  if expected[status] then served = served + 1 end',
  'end',
  'function done(summary, latency, requests)',
  '  local all, count, lost, gone, seconds = {}, 0, 0, false, summary.duration / 1e6',
  '  for _, thread in ipairs(threads) do',
  '    for status, n in pairs(thread:get("statuses")) do all[status] = (all[status] or 0) + n end',
  '    count = count + thread:get("served")',
  '    lost = lost + thread:get("wasted")',
  '    if thread:get("exhausted") then gone = true; seconds = thread:get("stopped") - thread:get("started") end',
  '  end',
  '  local parts = {}',
  '  for status, n in pairs(all) do table.insert(parts, string.format("\\"%d\\":%d", status, n)) end',
  '  local e = summary.errors',
  '  io.write(string.format("\\nWRK-RESULT {\\"served\\":%d,\\"wasted\\":%d,\\"statuses\\":{%s},\\"seconds\\":%.6f,\\"p50\\":%.3f,\\"p99\\":%.3f,\\"errors\\":%d,\\"exhausted\\":%s}\\n",',
  '    count, lost, table.concat(parts, ","), seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000,',
  '    e.connect + e.read + e.write + e.timeout, tostring(gone)))',
  'end',
);
fs.writeFileSync(script, lines.filter(Boolean).join('\n'));

const child = spawn('wrk', ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '30s', '-s', script, spec.url], { stdio: ['ignore', 'pipe', 'inherit'] });
let stdout = '';
let interrupted = false;
child.stdout.setEncoding('utf8').on('data', (chunk) => {
  stdout += chunk;
  // wrk waits out its duration whatever its thread does; SIGINT ends the wait and it reports.
  if (!interrupted && stdout.includes('WRK-EXHAUSTED')) {
    interrupted = true;
    child.kill('SIGINT');
  }
});
const code = await new Promise((resolve) => child.on('close', resolve));
fs.rmSync(dir, { recursive: true, force: true });
const line = stdout.split('\n').find((text) => text.startsWith('WRK-RESULT '));
if (code !== 0 || !line) {
  console.error(`wrk failed (${code}): ${stdout.slice(-1500)}`);
  process.exit(1);
}
const result = JSON.parse(line.slice('WRK-RESULT '.length));
const requests = Object.values(result.statuses).reduce((a, b) => a + b, 0);
console.log(JSON.stringify({
  requests,
  wasted: result.wasted,
  served: result.served,
  perSecond: result.served / result.seconds,
  p50: result.p50,
  p99: result.p99,
  seconds: result.seconds,
  statuses: result.statuses,
  errors: result.errors,
  exhausted: result.exhausted,
}));


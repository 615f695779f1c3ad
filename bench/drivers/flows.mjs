/**
 * Load driver for fresh login flows: `concurrency` browsers at once, each flow a new browser
 * (no cookies): authorize → login page → login post (argon2id) → consent if asked → the code
 * redirect. Spec (argv[2], JSON): { url, client, user, seconds, concurrency }
 * → { requests (flows), served, perSecond, p50, p99, seconds, statuses, httpRequests, driverCpuUs }
 * (driverCpuUs: this process's own CPU time over the run, which the service's cores also carry).
 */
import { Browser } from '../lib/browser.mjs';
import { percentile } from '../lib/stats.mjs';

const spec = JSON.parse(process.argv[2]);
const latencies = [];
let failures = 0;
let httpRequests = 0;
const began = Date.now();
const cpuBefore = process.cpuUsage();
const deadline = began + spec.seconds * 1000;
await Promise.all(Array.from({ length: spec.concurrency }, async () => {
  while (Date.now() < deadline) {
    const browser = new Browser(spec.url);
    const request = browser.request.bind(browser);
    browser.request = (...args) => { httpRequests += 1; return request(...args); };
    const started = performance.now();
    try {
      await browser.authorize(spec.client, spec.user);
      latencies.push(performance.now() - started);
    } catch (error) {
      failures += 1;
      if (failures === 1) console.error(String(error));
    }
  }
}));
const seconds = (Date.now() - began) / 1000;
const cpu = process.cpuUsage(cpuBefore);
console.log(JSON.stringify({
  requests: latencies.length + failures,
  served: latencies.length,
  perSecond: latencies.length / seconds,
  p50: percentile(latencies, 0.5),
  p99: percentile(latencies, 0.99),
  seconds,
  statuses: { ok: latencies.length, failed: failures },
  httpRequests,
  driverCpuUs: cpu.user + cpu.system,
}));

// Run in the image's build stage after `npm run build` and `npm prune` (Dockerfile): Prisma's client
// package carries the query compiler of every database it supports, in two builds, each as CommonJS
// and ESM (about 70 MB of @prisma/client/runtime/query_compiler_*), and the built client loads one
// of them. The image keeps the ones the built client (dist/generated/prisma) names and deletes the
// others; each kept one must still resolve, or the build fails here rather than at the first query.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const client = path.join(root, 'dist', 'generated', 'prisma');
const runtime = path.join(root, 'node_modules', '@prisma', 'client', 'runtime');

const named = new Set();
for (const file of fs.readdirSync(client, { recursive: true })) {
  if (!String(file).endsWith('.js')) continue;
  const text = fs.readFileSync(path.join(client, String(file)), 'utf8');
  for (const [, name] of text.matchAll(/["']@prisma\/client\/runtime\/(query_compiler_[^"']+)["']/g)) named.add(name);
}
if (named.size === 0) throw new Error(`no query compiler named in ${client}: the generated client changed shape, nothing is deleted`);

let freed = 0;
for (const file of fs.readdirSync(runtime)) {
  if (!file.startsWith('query_compiler_') || named.has(file)) continue;
  freed += fs.statSync(path.join(runtime, file)).size;
  fs.rmSync(path.join(runtime, file));
}
for (const name of named) {
  const resolved = new URL(import.meta.resolve(`@prisma/client/runtime/${name}`)).pathname;
  if (!fs.existsSync(resolved)) throw new Error(`@prisma/client/runtime/${name}, which the client loads, is missing (${resolved})`);
}
console.log(`prune-prisma-runtime: kept ${[...named].sort().join(', ')}; deleted ${(freed / 1e6).toFixed(1)} MB of other query compilers`);

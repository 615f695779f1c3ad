/**
 * The deployment files, read as text because no Docker engine runs the tests: docker-compose.yml
 * wires the app to its own Postgres and Redis, starts it only once both are healthy, and gives it
 * an environment src/config.ts accepts; the Dockerfile runs dist/launch.cjs on Node 22, unprivileged.
 */
import fs from 'node:fs';
import { describe, expect, test } from '@jest/globals';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { LIVE_PATH, READY_PATH } from '../../src/http/health.js';

type Env = Record<string, string | undefined>;
interface Service {
  image?: string;
  build?: unknown;
  ports?: unknown[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  stop_grace_period?: string;
  volumes?: (string | { target?: string })[];
}

const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const compose = parse(read('docker-compose.yml')) as { services?: Record<string, Service> };
const services = compose.services ?? {};
const app = services.app ?? {};

/** Compose takes `environment` as a map or as `NAME=value` lines; a bare name passes the host's value. */
function environment(service: Service): Env {
  const entries = Array.isArray(service.environment)
    ? service.environment.map((line) => (line.includes('=') ? line.split(/=(.*)/s).slice(0, 2) : [line, undefined]))
    : Object.entries(service.environment ?? {}).map(([name, value]) => [name, value === null ? undefined : String(value)]);
  return Object.fromEntries(entries) as Env;
}

/** Dockerfile instructions, continuation lines joined and comments dropped, grouped by FROM. */
function stages(text: string): { keyword: string; args: string }[][] {
  const instructions = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/).map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line)!;
      return { keyword: keyword.toUpperCase(), args };
    });
  const result: { keyword: string; args: string }[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') result.push([]);
    result.at(-1)?.push(instruction);
  }
  return result;
}

const dockerStages = stages(read('Dockerfile'));
const finalStage = dockerStages.at(-1) ?? [];
const argsOf = (keyword: string) => finalStage.filter((i) => i.keyword === keyword).map((i) => i.args);

/** The final stage's `ENV A=1 B=2` (or legacy `ENV A 1`): the container's defaults. Values hold no spaces. */
function imageEnvironment(): Env {
  const pairs = argsOf('ENV').flatMap((args) => (/^[\w.]+=/.test(args)
    ? args.split(/\s+/).map((pair) => pair.split(/=(.*)/s))
    : [args.split(/\s+(.*)/s)]));
  return Object.fromEntries(pairs.map(([name, value = '']) => [name, value.replace(/^"(.*)"$/, '$1')]));
}
const imageEnv = imageEnvironment();

/** The variables src/config.ts reads: every quoted upper-case name in it. */
const configVariables = new Set([...read('src/config.ts').matchAll(/'([A-Z][A-Z0-9_]*)'/g)].map((match) => match[1]!));

describe('docker-compose.yml', () => {
  test('defines app (built here), postgres and redis', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['app', 'postgres', 'redis']));
    expect(app.build).toBeDefined();
    expect(services.postgres?.image).toMatch(/^postgres:/);
    expect(services.redis?.image).toMatch(/^redis:/);
  });

  test('app reaches Postgres with the credentials and database the postgres service creates', () => {
    const url = new URL(environment(app).DATABASE_URL ?? 'missing:');
    const postgres = environment(services.postgres ?? {});
    const user = postgres.POSTGRES_USER ?? 'postgres'; // the image's defaults
    expect(url.hostname).toBe('postgres');
    expect(url.port).toMatch(/^(5432)?$/);
    expect(decodeURIComponent(url.username)).toBe(user);
    expect(postgres.POSTGRES_PASSWORD).toBeTruthy();
    expect(decodeURIComponent(url.password)).toBe(postgres.POSTGRES_PASSWORD);
    expect(decodeURIComponent(url.pathname.slice(1))).toBe(postgres.POSTGRES_DB ?? user);
  });

  test('app reaches Redis on the redis service', () => {
    const url = new URL(environment(app).REDIS_URL ?? 'missing:');
    expect(url.hostname).toBe('redis');
    expect(url.port).toMatch(/^(6379)?$/);
  });

  test('app starts only once postgres and redis are healthy', () => {
    expect(app.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
  });

  test('every service has a healthcheck; app probes its readiness with node (the image has no curl)', () => {
    const unchecked = ['app', 'postgres', 'redis'].filter((name) => {
      const check = services[name]?.healthcheck;
      return check?.test === undefined || check.disable === true || [check.test].flat()[0] === 'NONE';
    });
    expect(unchecked).toEqual([]);
    const check = [app.healthcheck!.test!].flat();
    expect(check.slice(0, 3)).toEqual(['CMD', 'node', '-e']);
    expect(check[3]).toContain(`${READY_PATH}'`);
  });

  test('app is given the time of a drained shutdown before Docker kills it', () => {
    const { shutdownDelayMs, shutdownMs } = loadConfig({ ...imageEnv, ...environment(app) }).timeouts;
    const grace = /^(\d+)s$/.exec(app.stop_grace_period ?? '');
    expect(grace).not.toBeNull();
    expect(Number(grace![1]) * 1000).toBeGreaterThan(shutdownDelayMs + shutdownMs);
  });

  test("app's environment only sets variables src/config.ts reads", () => {
    expect([...configVariables]).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'BASE_URL', 'DATA_DIR']));
    const names = [...Object.keys(environment(app)), ...Object.keys(imageEnv)];
    expect(names.filter((name) => !configVariables.has(name))).toEqual([]);
  });

  test("app's environment (over the image's ENV) passes loadConfig, with Postgres, Redis and a persistent DATA_DIR", () => {
    const config = loadConfig({ ...imageEnv, ...environment(app) });
    expect(config.databaseUrl).toBeDefined();
    expect(config.redisUrl).toBeDefined();
    // Published as HOST:CONTAINER: the container side is PORT, the host side is BASE_URL's port.
    expect(app.ports?.map(String)).toContain(`${new URL(config.baseUrl).port || 80}:${config.port}`);
    const targets = (app.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume.split(':')[1] : volume.target));
    expect(targets).toContain(config.dataDir);
  });
});

describe('Dockerfile', () => {
  test('builds every stage on a Node 22 image', () => {
    const images = dockerStages.map((stage) => stage[0]!.args.split(/\s+/).find((word) => !word.startsWith('--')));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(image).toMatch(/^node:22(?:[-.@]|$)/);
  });

  test('runs node dist/launch.cjs as a non-root user, exposing 3000', () => {
    expect(JSON.parse(argsOf('CMD').at(-1) ?? '[]')).toEqual(['node', 'dist/launch.cjs']);
    expect(argsOf('USER').at(-1)).toMatch(/^(?!root\b|0\b)\S+/);
    expect(argsOf('EXPOSE').join(' ').split(/\s+/)).toContain('3000');
  });

  test('copies what the postinstall script needs before npm install', () => {
    const stage = dockerStages.find((s) => s.some((i) => i.keyword === 'RUN' && /\bnpm (ci|install)\b/.test(i.args)));
    expect(stage).toBeDefined();
    const install = stage!.findIndex((i) => i.keyword === 'RUN' && /\bnpm (ci|install)\b/.test(i.args));
    const copied = stage!.slice(0, install).filter((i) => i.keyword === 'COPY' && !i.args.includes('--from'))
      .flatMap((i) => i.args.split(/\s+/).filter((word) => !word.startsWith('--')).slice(0, -1))
      .map((source) => source.replace(/^\.\//, '').replace(/\/$/, ''));
    const missing = ['package.json', 'package-lock.json', 'prisma', 'scripts']
      .filter((needed) => !copied.includes(needed) && !copied.includes('.'));
    expect(missing).toEqual([]);
  });

  test('is multi-stage: the final stage takes only built output and production dependencies from the build stage', () => {
    expect(dockerStages.length).toBeGreaterThanOrEqual(2);
    const copies = argsOf('COPY');
    expect(copies.filter((args) => !args.startsWith('--from='))).toEqual([]);
    expect(argsOf('RUN').join(' ')).not.toMatch(/\bnpm (ci|install)\b/);
    const build = dockerStages.slice(0, -1).flat().filter((i) => i.keyword === 'RUN').map((i) => i.args).join(' ');
    expect(build).toMatch(/npm prune --omit=dev|npm ci --omit=dev/);
  });

  test('the final stage holds every file the service reads at run time', () => {
    const sources = argsOf('COPY').map((args) => args.split(/\s+/).filter((word) => !word.startsWith('--')).at(0)!.replace(/^\/app\//, '').replace(/\/$/, ''));
    expect(sources).toEqual(expect.arrayContaining(['package.json', 'node_modules', 'dist', 'views', 'prisma/migrations', 'openapi.json']));
  });

  test('HEALTHCHECK probes liveness with node, no curl', () => {
    const healthchecks = argsOf('HEALTHCHECK');
    expect(healthchecks).toHaveLength(1);
    const command = /\bCMD\s+(\[.*\])\s*$/.exec(healthchecks[0]!);
    expect(command).not.toBeNull();
    const argv = JSON.parse(command![1]!) as string[];
    expect(argv.slice(0, 2)).toEqual(['node', '-e']);
    expect(argv[2]).toContain(`${LIVE_PATH}'`);
    expect(argv.join(' ')).not.toMatch(/\b(curl|wget)\b/);
  });
});

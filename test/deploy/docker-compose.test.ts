/**
 * The deployment files, read as text (scripts/compose-smoke.sh runs them for real, outside the
 * tests): docker-compose.yml wires the app to its own Postgres and Redis, starts it only once both
 * are healthy (PostgreSQL checked over TCP, as the app connects), restarts it, keeps every store's
 * data in a named volume, publishes only the app and on 127.0.0.1 unless told otherwise, and gives
 * it an environment src/config.ts accepts; the Dockerfile runs dist/launch.cjs on Node 22,
 * unprivileged. test/deploy/dockerfile-build.test.ts replays the image's build steps.
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
  command?: string | string[];
  restart?: string;
  ports?: unknown[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  stop_grace_period?: string;
  volumes?: (string | { target?: string })[];
}

const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/**
 * Compose's interpolation of one value from the shell's `variables`: `${NAME}`, `$NAME`,
 * `${NAME:-default}` (unset or empty), `${NAME-default}` (unset), `$$` for a dollar sign.
 * @see https://docs.docker.com/reference/compose-file/interpolation/
 */
function interpolate(value: string, variables: Env): string {
  return value.replace(/\$(?:\$|\{([A-Za-z_]\w*)(?:(:?)-([^}]*))?\}|([A-Za-z_]\w*))/g, (match, braced?: string, colon?: string, fallback?: string, bare?: string) => {
    if (match === '$$') return '$';
    const given = variables[(braced ?? bare)!];
    if (fallback !== undefined && (given === undefined || (colon === ':' && given === ''))) return fallback;
    return given ?? '';
  });
}
const interpolated = (node: unknown, variables: Env): unknown => (typeof node === 'string' ? interpolate(node, variables)
  : Array.isArray(node) ? node.map((item) => interpolated(item, variables))
    : node && typeof node === 'object' ? Object.fromEntries(Object.entries(node).map(([key, value]) => [key, interpolated(value, variables)])) : node);

const composeFile = parse(read('docker-compose.yml')) as { services?: Record<string, Service>; volumes?: Record<string, unknown> };
/** The services as Compose sees them when the shell sets `variables` (none: the defaults). */
const servicesWith = (variables: Env = {}) => (interpolated(composeFile, variables) as typeof composeFile).services ?? {};
const services = servicesWith();
const app = services.app ?? {};

/** A published port's parts: `[ADDRESS:]HOST:CONTAINER` (the short syntax). */
function published(entry: unknown): { address: string | undefined; host: string; container: string } {
  const parts = String(entry).split(':');
  const container = parts.pop()!;
  const host = parts.pop() ?? '';
  return { address: parts.length > 0 ? parts.join(':') : undefined, host, container };
}

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

  test('app starts only once postgres and redis are healthy, and is started again when it exits', () => {
    expect(app.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' }, redis: { condition: 'service_healthy' } });
    expect(app.restart).toMatch(/^(unless-stopped|always|on-failure(:\d+)?)$/);
  });

  test("postgres's healthcheck asks over TCP, as the app connects (the first start initialises on a socket-only server)", () => {
    const check = [services.postgres?.healthcheck?.test ?? []].flat().join(' ');
    expect(check).toMatch(/\bpg_isready\b/);
    expect(check).toMatch(/(-h|--host)[ =](127\.0\.0\.1|localhost)\b/);
  });

  test('every store keeps its data in a named volume of the stack (no anonymous volume, nothing lost on down/up)', () => {
    const dataDirs = { postgres: '/var/lib/postgresql/data', redis: '/data', app: loadConfig({ ...imageEnv, ...environment(app) }).dataDir };
    const named = Object.keys(composeFile.volumes ?? {});
    for (const [name, dir] of Object.entries(dataDirs)) {
      const mount = (services[name]?.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':') : [undefined, v.target])).find(([, target]) => target === dir);
      expect({ name, named: named.includes(mount?.[0] ?? '') }).toEqual({ name, named: true });
    }
  });

  test('redis writes an append-only file, so login sessions survive a restart', () => {
    expect([services.redis?.command ?? []].flat().join(' ')).toMatch(/--appendonly yes\b/);
  });

  test('only app publishes a port, on 127.0.0.1 by default; OAUTH_HOST_ADDRESS and OAUTH_HOST_PORT change it, and BASE_URL follows the port', () => {
    expect(Object.entries(services).filter(([name, service]) => name !== 'app' && (service.ports ?? []).length > 0)).toEqual([]);
    expect(app.ports?.map(published)).toEqual([{ address: '127.0.0.1', host: '3000', container: '3000' }]);
    const moved = servicesWith({ OAUTH_HOST_ADDRESS: '0.0.0.0', OAUTH_HOST_PORT: '8080' }).app!;
    expect(moved.ports?.map(published)).toEqual([{ address: '0.0.0.0', host: '8080', container: '3000' }]);
    expect(new URL(loadConfig({ ...imageEnv, ...environment(moved) }).baseUrl).port).toBe('8080');
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
    // Published as [ADDRESS:]HOST:CONTAINER: the container side is PORT, the host side is BASE_URL's port.
    expect(app.ports?.map(published)).toContainEqual(expect.objectContaining({ host: new URL(config.baseUrl).port || '80', container: String(config.port) }));
    const targets = (app.volumes ?? []).map((volume) => (typeof volume === 'string' ? volume.split(':')[1] : volume.target));
    expect(targets).toContain(config.dataDir);
  });
});

describe('Dockerfile', () => {
  test('builds on a Node 22 image, and runs that Node: the final stage is one, or takes its node binary', () => {
    const imageOf = (stage: { args: string }[]) => stage[0]!.args.split(/\s+/).find((word) => !word.startsWith('--'))!;
    const nameOf = (stage: { args: string }[]) => /\bAS\s+(\S+)/i.exec(stage[0]!.args)?.[1];
    const builds = dockerStages.slice(0, -1);
    expect(builds.length).toBeGreaterThan(0);
    for (const stage of builds) expect(imageOf(stage)).toMatch(/^node:22(?:[-.@]|$)/);
    if (/^node:22(?:[-.@]|$)/.test(imageOf(finalStage))) return;
    const node = argsOf('COPY').map((args) => /^--from=(\S+)\s+(\S+)\s+(\S+)$/.exec(args)).find((m) => m?.[2] === '/usr/local/bin/node');
    expect(node?.[3]).toBe('/usr/local/bin/node');
    expect(builds.map(nameOf)).toContain(node![1]);
  });

  test('has no parser directive that makes BuildKit pull a frontend image (`# syntax=`)', () => {
    expect(read('Dockerfile')).not.toMatch(/^#\s*syntax\s*=/im);
  });

  test('runs node dist/launch.cjs as a non-root user, exposing 3000', () => {
    expect(JSON.parse(argsOf('CMD').at(-1) ?? '[]')).toEqual(['node', 'dist/launch.cjs']);
    expect(argsOf('USER').at(-1)).toMatch(/^(?!root\b|0\b)\S+/);
    expect(argsOf('EXPOSE').join(' ').split(/\s+/)).toContain('3000');
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

# The OAuth service image: built on Node 22 with the dev toolchain, run by Node alone with the
# production dependencies, as the unprivileged `node` user (uid 1000). Node 22 LTS because
# oidc-provider 9 supports only current LTS. The local/CI stack: docker-compose.yml; production
# settings: the comment at the top of that file; docs/deployment.md.
#
# No `# syntax=` line: this file needs nothing the classic builder lacks, and under BuildKit that
# line makes every build pull a frontend image from a registry, which fails where none is reachable.

FROM node:22-slim AS build
WORKDIR /app
# Prisma's CLI probes libssl to name the platform; slim images ship without it (build stage only:
# at run time the generated client uses its wasm query compiler and no native engine).
RUN apt-get update \
  && apt-get install -y --no-install-recommends openssl \
  && rm -rf /var/lib/apt/lists/*
# What `npm install` runs (postinstall) reads goes in first: scripts/prisma-generate.mjs reads
# prisma/schema.prisma, scripts/compile-views.mjs reads views/. The dependency layer is then reused
# until one of them changes. test/deploy/dockerfile-build.test.ts replays every build step on what
# the lines before it copied.
COPY package.json package-lock.json ./
COPY prisma ./prisma
COPY scripts/prisma-generate.mjs scripts/compile-views.mjs ./scripts/
COPY views ./views
# Not `npm ci`: it insists the lock lists every platform's optional packages (@swc/core-darwin-*,
# ...), which the lock cannot hold when made against a registry that serves Linux builds only.
RUN npm install --no-audit --no-fund
COPY . .
# Then the production dependencies only. The Prisma CLI and the rest of the toolchain are
# devDependencies; `--omit=optional` too, because npm keeps a devDependency that a production
# package names as an optional peer (@prisma/client names prisma and typescript) unless both kinds
# are omitted, and no production package needs an optional one. Of Prisma's query compilers, the
# ones the built client loads (scripts/prune-prisma-runtime.mjs).
RUN npm run build \
  && npm prune --omit=dev --omit=optional \
  && node scripts/prune-prisma-runtime.mjs

# Node itself, without npm, corepack or the C headers (build-time tools): the node images' Debian
# release, whose libraries the node binary links. The same base layer as postgres:15 and redis:7.
FROM debian:bookworm-slim
# The node images' unprivileged user (uid and gid 1000). DATA_DIR keeps generated keys (and PGlite
# when DATABASE_URL is unset): created here, owned by `node`, so a fresh named volume mounted on it
# inherits that owner and stays writable.
RUN groupadd --gid 1000 node \
  && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
  && mkdir -p /app/data \
  && chown node:node /app/data
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
ENV NODE_ENV=production PORT=3000 DATA_DIR=/app/data
# package.json carries "type": "module", which dist/ needs. The pages are compiled into dist/ at
# build time; views/ (the stylesheet) and prisma/migrations/ are read at run time, found beside
# dist/ (src/ui/views.ts, src/store/migrate.ts); migrations apply on start.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/views ./views
COPY --from=build /app/prisma/migrations ./prisma/migrations
# Served at GET /api/openapi.json, read at start-up from beside dist/ (src/http/openapi-document.ts).
COPY --from=build /app/openapi.json ./
VOLUME /app/data
USER node
EXPOSE 3000
# Liveness only (GET /healthz/live touches no store): Docker restarts nothing on health, and a
# store outage must not mark the process unhealthy; docker-compose.yml and orchestrators route
# traffic on readiness (/healthz/ready) instead. Node's own fetch: the image has no curl. The
# service listens once its stores answered (STORES_STARTUP_TIMEOUT_MS, 1 min by default), hence
# the start period. Plain http on PORT: with TLS_CERT_FILE set, override this check (or probe
# through the proxy).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node as PID 1 receives SIGTERM directly; src/main.ts closes connections and stores on it.
CMD ["node", "dist/launch.cjs"]

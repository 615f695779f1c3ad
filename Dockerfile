# syntax=docker/dockerfile:1
# The OAuth service image: built with the dev toolchain, run with production dependencies only,
# as the unprivileged `node` user. Node 22 LTS because oidc-provider 9 supports only current LTS.
# Local/CI stack: docker-compose.yml. Production settings: see the comment at the top of that file.

FROM node:22-slim AS build
WORKDIR /app
# Prisma's CLI probes libssl to name the platform; slim images ship without it (build stage only:
# at run time the generated client uses its wasm query compiler and no native engine).
RUN apt-get update \
  && apt-get install -y --no-install-recommends openssl \
  && rm -rf /var/lib/apt/lists/*
# `npm install` runs postinstall (scripts/prisma-generate.mjs), which reads prisma/schema.prisma, so
# those go in first; the dependency layer is then reused until one of them changes.
COPY package.json package-lock.json ./
COPY prisma ./prisma
COPY scripts ./scripts
# Not `npm ci`: it insists the lock lists every platform's optional packages (@swc/core-darwin-*,
# ...), which the lock cannot hold when made against a registry that serves Linux builds only.
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:22-slim
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
# DATA_DIR keeps generated keys (and PGlite when DATABASE_URL is unset). Created here, owned by
# `node`, so a fresh named volume mounted on it inherits that owner and stays writable.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME /app/data
USER node
EXPOSE 3000
# Liveness only (GET /healthz/live touches no store): Docker restarts nothing on health, and a
# store outage must not mark the process unhealthy; docker-compose.yml and orchestrators route
# traffic on readiness (/healthz/ready) instead. Node's own fetch: the slim image has no curl.
# Plain http on PORT: with TLS_CERT_FILE set, override this check (or probe through the proxy).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node as PID 1 receives SIGTERM directly; src/main.ts closes connections and stores on it.
CMD ["node", "dist/launch.cjs"]

# One image for every part of the system; the command chooses the part:
#   docker build -t catalog-ai .
#   docker run catalog-ai migrate      # apply the database migrations, then exit (a Job, before a rollout)
#   docker run catalog-ai gateway      # or: catalog, ai, worker (each its own Deployment); all (one process)
# Configuration comes from the environment (docs/configuration.md); NODE_ENV=production refuses every
# development fallback. Kubernetes manifests: deploy/. Build and run details: docs/operations.md.

# The base image: the official Node 24 image by default. Builders without registry access pass
# their own (the deployment test builds one from Debian packages and the pinned Node 24 binary).
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: every dependency, the TypeScript build ------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Only for builders behind a TLS-intercepting proxy: a CA bundle mounted at build time. An ARG is
# seen by RUN steps of its stage and never reaches the runtime image.
ARG NODE_EXTRA_CA_CERTS
COPY package.json package-lock.json prisma.config.ts ./
COPY prisma/schema.prisma prisma/generate.mjs prisma/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# --- production dependencies, without what the runtime never loads -------------------------------
FROM ${NODE_IMAGE} AS production-dependencies
WORKDIR /app
ARG NODE_EXTRA_CA_CERTS
COPY package.json package-lock.json ./
COPY prisma/generate.mjs prisma/
COPY deploy/prune-node-modules.mjs deploy/
# --omit=optional also leaves out the optional peers Prisma's client names (the Prisma CLI and
# TypeScript): the client is compiled into dist/ by the build stage.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund \
 && node deploy/prune-node-modules.mjs node_modules \
 && npm cache clean --force

# --- runtime ---------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="catalog-ai-federation" \
      org.opencontainers.image.description="Catalog and AI gateway subgraphs, Apollo gateway with REST-compat, NATS JetStream event worker" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="NOASSERTION"
# APOLLO_TELEMETRY_DISABLED: Apollo Gateway reports usage to Apollo unless told not to (it reads
# only the environment); a hospital network is never called out of unasked.
ENV NODE_ENV=production \
    APOLLO_TELEMETRY_DISABLED=true \
    HOST=0.0.0.0 \
    DATA_DIR=/var/lib/catalog-ai \
    SERVICE_COMMIT=${REVISION}
WORKDIR /app
COPY package.json ./
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The files the code reads at run time (platform/project-files.ts RUNTIME_FILES).
COPY prisma/migrations ./prisma/migrations
COPY events/schemas ./events/schemas
COPY gateway/supergraph.graphql ./gateway/supergraph.graphql
# No user of the base image is assumed: a numeric one, which Kubernetes' runAsNonRoot can verify.
RUN mkdir -p /var/lib/catalog-ai && chown 10001:10001 /var/lib/catalog-ai
USER 10001:10001
# gateway (PORT), catalog (CATALOG_PORT), ai (AI_PORT), worker probes and metrics (METRICS_PORT)
EXPOSE 4000 4001 4002 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 CMD ["node", "dist/processes/healthcheck.cli.js"]
ENTRYPOINT ["node", "--enable-source-maps", "dist/processes/run-part.cli.js"]
CMD ["gateway"]

#!/usr/bin/env bash
# Drafts the SQL of a new migration: the diff from the schema at a git revision (default HEAD) to
# the working schema.prisma, printed on stdout. Prisma 7's CLI needs a native schema engine that
# cannot be downloaded here, but Prisma 6.19's wasm engine ("engine: js") can diff two datamodels
# offline. Review the SQL, then save it as prisma/migrations/<UTC timestamp>_<name>/migration.sql.
#   usage: prisma/draft-migration.sh [git-rev]   (rev "empty" diffs from an empty database)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
work=${PRISMA6_WORKDIR:-/tmp/prisma6-draft}
# The js engine opens a connection even for a datamodel-to-datamodel diff; it changes nothing.
url=${DRAFT_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
mkdir -p "$work"
if [ ! -x "$work/node_modules/.bin/prisma" ]; then
  (cd "$work" && echo '{"private":true}' > package.json &&
    npm install --silent prisma@6.19.3 @prisma/adapter-pg@6.19.3 pg >/dev/null 2>&1)
fi
adapt() { # Prisma 6 wants a url in the schema and knows no moduleFormat, nor partial indexes:
  # their `where:` is dropped on both sides, so write a new partial index's SQL by hand.
  sed -e '/moduleFormat/d' -e '/previewFeatures = \["partialIndexes"\]/d' \
    -e 's#, where: raw("\(\\"\|[^"]\)*")##' \
    -e "s#provider = \"postgresql\"#provider = \"postgresql\"\n  url = \"$url\"#"
}
adapt < "$root/prisma/schema.prisma" > "$work/to.prisma"
cat > "$work/prisma.config.ts" <<TS
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg';
export default defineConfig({
  experimental: { adapter: true }, engine: 'js', schema: 'to.prisma',
  adapter: async () => new PrismaPg({ connectionString: '$url' }),
} as never);
TS
if [ "$rev" = empty ]; then from=(--from-empty); else
  git -C "$root" show "$rev:prisma/schema.prisma" | adapt > "$work/from.prisma"
  from=(--from-schema-datamodel from.prisma)
fi
cd "$work"
PRISMA_QUERY_ENGINE_LIBRARY=/bin/true PRISMA_SCHEMA_ENGINE_BINARY=/bin/true \
  npx prisma migrate diff "${from[@]}" --to-schema-datamodel to.prisma --script 2>/dev/null |
  sed '/^-- CreateSchema/,+2d'

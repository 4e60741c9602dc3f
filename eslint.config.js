import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';

/**
 * The design's "may import" column (docs: README "Layout"), as import zones: a file in `target`
 * may not import from `from` (except `except`). The ground floor imports nothing of ours; catalog
 * and AI meet only in the supergraph; REST-compat reaches the gateway through its execute port.
 */
const OURS = [
  './platform',
  './prisma',
  './events',
  './subgraphs',
  './gateway',
  './rest-compat',
  './processes',
  './system.ts',
  './main.ts',
  './bench',
  './test',
];
const above = (...allowed) => OURS.filter((folder) => !allowed.includes(folder));

const NO_ENV_WRITES = {
  selector:
    "AssignmentExpression > MemberExpression.left[object.type='MemberExpression'][object.object.name='process'][object.property.name='env'], UnaryExpression[operator='delete'] > MemberExpression[object.object.name='process'][object.property.name='env']",
  message: 'Product code never writes process.env: read configuration once (platform/config) and pass it on.',
};

/**
 * events/ in floors, from the ground up: the bus, the schemas and the ledger (the inbox and the
 * consumer watermark: what a consumer has settled) stand alone; publishing (outbox, relay) knows
 * neither consumers nor ordering; ordering (the producer-order guard) keeps its floor in the ledger;
 * dead letters and the archive serve the consumers, which use them all. The files at events/
 * itself (envelope, config, streams, the worker) may use every folder. The table must stay free of
 * loops: `floorsOf` refuses one when this file loads.
 */
const EVENTS_MAY_IMPORT = {
  bus: [],
  schemas: [],
  ledger: [],
  publish: ['bus', 'schemas'],
  ordering: ['bus', 'ledger'],
  'dead-letters': ['bus', 'ledger', 'ordering'],
  archive: ['bus', 'ledger'],
  consume: ['bus', 'schemas', 'ledger', 'ordering', 'publish', 'dead-letters'],
};

/** The folders in floor order; throws when the table lets two folders reach each other. */
export function floorsOf(mayImport) {
  const placed = [];
  const visiting = new Set();
  const visit = (folder, path) => {
    if (placed.includes(folder)) return;
    if (visiting.has(folder)) throw new Error(`folders import each other: ${[...path, folder].join(' -> ')}`);
    visiting.add(folder);
    for (const below of mayImport[folder]) visit(below, [...path, folder]);
    visiting.delete(folder);
    placed.push(folder);
  };
  for (const folder of Object.keys(mayImport)) visit(folder, []);
  return placed;
}
/** Zones that keep the rooms of `house` in the floors `mayImport` gives them. */
function roomZones(house, mayImport) {
  const rooms = floorsOf(mayImport);
  return rooms.map((room) => ({
    target: `./${house}/${room}`,
    from: rooms.filter((other) => other !== room && !mayImport[room].includes(other)).map((other) => `./${house}/${other}`),
    message: `${house}/${room}/ may import, of ${house}/, only ${[`the files at ${house}/`, ...mayImport[room].map((f) => `${f}/`)].join(', ')}.`,
  }));
}

/**
 * gateway/ in rooms: the front door (the HTTP pipeline and its pages), the subgraph calls (fetch,
 * replicas, answers), the result shaping and the response cache stand side by side, each on
 * platform/ and the files at gateway/ itself (its config and the request context they share);
 * gateway.ts, at the top, puts them together.
 */
const GATEWAY_MAY_IMPORT = {
  'front-door': [],
  'subgraph-calls': [],
  'result-shaping': [],
  'response-cache': [],
  client: [],
};
/**
 * platform/ in rooms, from the ground up: the configuration (parsed once, with the shapes it
 * parses into) and the pure text helpers (canonical JSON, locales, line diffs) stand alone;
 * observability (logger, metrics, tracing) reads only the configuration; the database client logs
 * and reaches its server; errors classify an unreachable database as 503 (db/unreachable.ts);
 * auth, the HTTP pipeline, the process lifecycle (bootstrap, parts, readiness, exit), the
 * idempotency stores and the GraphQL doors each stand on the rooms below them. The files at
 * platform/ itself (ids, clock, project files, a free port, reaching a dependency, the Redis
 * client) every room may use; they import no room above observability and config.
 */
const PLATFORM_MAY_IMPORT = {
  config: [],
  text: [],
  observability: ['config'],
  db: ['config', 'observability'],
  errors: ['db'],
  auth: ['config', 'errors'],
  http: ['config', 'errors', 'observability', 'auth'],
  lifecycle: ['config', 'observability', 'db', 'auth', 'http'],
  idempotency: ['text', 'db', 'errors', 'observability', 'http', 'lifecycle'],
  graphql: ['config', 'errors', 'observability', 'auth', 'http', 'idempotency'],
};
export const LAYER_ZONES = [
  // The Prisma client generated from prisma/schema.prisma is the database library platform/ wraps.
  {
    target: './platform',
    from: above('./platform', './prisma'),
    message: 'platform/ is the ground floor: it imports nothing of ours.',
  },
  {
    target: './platform',
    from: './prisma',
    except: ['./generated'],
    message: 'platform/ is the ground floor: it imports nothing of ours.',
  },
  ...roomZones('platform', PLATFORM_MAY_IMPORT),
  { target: './prisma', from: above('./prisma', './platform'), message: 'prisma/ holds the schema and migrations only.' },
  { target: './events', from: above('./events', './platform'), message: 'events/ may import platform/ only.' },
  ...roomZones('events', EVENTS_MAY_IMPORT),
  {
    target: './subgraphs/catalog',
    from: [...above('./subgraphs', './events', './platform', './prisma'), './subgraphs/ai'],
    message: 'The catalog subgraph may import platform/ and events/; it meets the AI subgraph only in the supergraph.',
  },
  {
    target: './subgraphs/ai',
    from: [...above('./subgraphs', './events', './platform', './prisma'), './subgraphs/catalog'],
    message: 'The AI subgraph may import platform/ and events/; it meets the catalog only in the supergraph.',
  },
  {
    target: './subgraphs/shared',
    from: [...above('./subgraphs', './events', './platform', './prisma'), './subgraphs/catalog', './subgraphs/ai'],
    message: 'subgraphs/shared/ serves both subgraphs and imports neither.',
  },
  {
    target: './gateway',
    from: above('./gateway', './platform'),
    message: 'gateway/ may import platform/ only (no subgraph code, no REST-compat).',
  },
  ...roomZones('gateway', GATEWAY_MAY_IMPORT),
  {
    target: './rest-compat',
    from: above('./rest-compat', './platform', './gateway'),
    message: "rest-compat/ may import platform/ and the gateway's execute port.",
  },
  {
    target: './rest-compat',
    from: './gateway',
    except: ['./execute-port.ts'],
    message: 'rest-compat/ reaches the gateway only through its execute port (gateway/execute-port.ts).',
  },
];

/** What a pure `*.logic.ts` may not touch: I/O, frameworks, the clock, randomness. */
const IMPURE_MODULES = [
  'graphql',
  'type-graphql',
  '@prisma/client',
  'pg',
  'ioredis',
  'undici',
  'jose',
  'node:fs',
  'node:fs/promises',
  'node:http',
  'node:https',
  'node:net',
  'node:child_process',
  'fs',
  'http',
];
const IMPURE_PATTERNS = ['@apollo/*', '@nats-io/*', '**/prisma/generated/**', '**/*.repo.js', '**/bus/*-bus.js'];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.data/**',
      'prisma/generated/**',
      'bench/peers/**',
      '.scratch/**',
      'dist/**',
      'test/fixtures/lint/**',
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Decorated GraphQL classes declare fields that are assigned by the mappers.
      '@typescript-eslint/no-unsafe-declaration-merging': 'off',
      '@typescript-eslint/no-empty-function': 'off',
    },
  },
  {
    files: ['**/*.ts', '**/*.mts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      // The TypeScript resolver (v3, pure JS): v4 and later pull in a native resolver whose
      // non-Linux builds this machine's registry mirror does not carry, which breaks `npm ci`.
      'import-x/resolver': { typescript: { project: './tsconfig.json' } },
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: LAYER_ZONES }],
    },
  },
  {
    // Product code never writes the environment: configuration is parsed once from it (issue #27).
    files: ['**/*.ts'],
    ignores: ['test/**', 'bench/**'],
    rules: { 'no-restricted-syntax': ['error', NO_ENV_WRITES] },
  },
  {
    files: ['**/*.logic.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: IMPURE_MODULES.map((name) => ({
            name,
            allowTypeImports: true,
            message: '*.logic.ts is pure: plain data in, decisions out (no I/O, no frameworks).',
          })),
          patterns: [
            {
              group: IMPURE_PATTERNS,
              allowTypeImports: true,
              message: '*.logic.ts is pure: plain data in, decisions out (no I/O, no frameworks).',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        NO_ENV_WRITES,
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: '*.logic.ts takes the time as an argument (inject a Clock).',
        },
        {
          selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']",
          message: '*.logic.ts takes the time as an argument (inject a Clock).',
        },
        {
          selector: "CallExpression[callee.object.name='Math'][callee.property.name='random']",
          message: '*.logic.ts takes randomness as an argument.',
        },
      ],
    },
  },
);

import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { reply, type Endpoint, type EndpointTable } from '../../platform/http/pipeline.js';

/**
 * GraphiQL served from the npm packages (graphiql 3's UMD build on React 18's UMD build): no CDN,
 * so it works on hospital networks that block Apollo Sandbox's. The page itself is public; every
 * operation it sends carries the headers typed into its header editor and is authenticated by
 * /graphql like any other request.
 */
export const GRAPHIQL_PATH = '/graphiql';

const ASSETS: Record<string, { pkg: string; file: string; type: string }> = {
  'react.js': { pkg: 'react', file: 'umd/react.production.min.js', type: 'text/javascript; charset=utf-8' },
  'react-dom.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.js': { pkg: 'graphiql', file: 'dist/index.umd.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.css': { pkg: 'graphiql', file: 'dist/style.css', type: 'text/css; charset=utf-8' },
};

/** Placeholders the user replaces; the page refetches the schema once they hold a real token. */
export const PLACEHOLDER_HEADERS = { Authorization: 'Bearer <token>', 'X-Tenant-Id': '<tenant>' };

const DEFAULT_QUERY = `# Put your token and tenant in the Headers tab below (npm run token prints both);
# the schema (Docs, autocompletion) loads as soon as they are valid.
query Courses {
  courses(first: 5) {
    edges {
      node {
        courseId
        slug
      }
    }
  }
}
`;

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>GraphiQL · catalog + AI gateway</title>
    <link rel="stylesheet" href="${GRAPHIQL_PATH}/assets/graphiql.css" />
    <style>html, body, #graphiql { height: 100%; margin: 0; }</style>
  </head>
  <body>
    <div id="graphiql">Loading GraphiQL…</div>
    <script src="${GRAPHIQL_PATH}/assets/react.js"></script>
    <script src="${GRAPHIQL_PATH}/assets/react-dom.js"></script>
    <script src="${GRAPHIQL_PATH}/assets/graphiql.js"></script>
    <script src="${GRAPHIQL_PATH}/assets/init.js"></script>
  </body>
</html>
`;

// Kept as a file (not an inline script) so the page runs under a CSP without 'unsafe-inline'.
const INIT = `(() => {
  const endpoint = new URL('/graphql', window.location.href).toString();
  const placeholders = ${JSON.stringify(JSON.stringify(PLACEHOLDER_HEADERS, null, 2))};
  const defaultQuery = ${JSON.stringify(DEFAULT_QUERY)};
  const h = React.createElement;
  function usable(headers) {
    try {
      const parsed = typeof headers === 'string' ? JSON.parse(headers || '{}') : headers || {};
      const auth = parsed.Authorization || parsed.authorization || '';
      return /^Bearer [A-Za-z0-9._-]{20,}$/.test(auth) ? JSON.stringify(parsed) : null;
    } catch (e) {
      return null;
    }
  }
  // Nothing is sent while the headers hold no token: the first screen shows what to do, not a 401
  // from the placeholders (issue #26).
  const hint = {
    errors: [{ message: 'Put a token and its tenant in the Headers tab (npm run token prints both); the schema loads once they are valid.' }],
  };
  function guarded(base) {
    return (params, options) => (usable(options && options.headers) ? base(params, options) : Promise.resolve(hint));
  }
  function App() {
    // GraphiQL introspects when its fetcher changes: a new fetcher per usable header set makes the
    // schema (Docs, autocompletion) load as soon as a valid token is typed.
    const [key, setKey] = React.useState('');
    const fetcher = React.useMemo(() => guarded(GraphiQL.createFetcher({ url: endpoint })), [key]);
    const timer = React.useRef(0);
    return h(GraphiQL, {
      fetcher,
      defaultQuery,
      defaultHeaders: placeholders,
      defaultEditorToolsVisibility: 'headers',
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
      onEditHeaders: (headers) => {
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(() => {
          const next = usable(headers);
          if (next) setKey(next);
        }, 400);
      },
    });
  }
  ReactDOM.createRoot(document.getElementById('graphiql')).render(h(App));
})();
`;

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

/**
 * The page and its assets as public endpoints (GET and HEAD). Asset files are read from the npm
 * packages on first use and kept: they are a few hundred kilobytes and never change at run time.
 */
export function graphiqlEndpoints(): EndpointTable {
  const require = createRequire(import.meta.url);
  const cache = new Map<string, Buffer>();
  const read = async (name: string): Promise<Buffer> => {
    const hit = cache.get(name);
    if (hit) return hit;
    const asset = ASSETS[name];
    const dir = path.dirname(require.resolve(`${asset.pkg}/package.json`));
    const body = await fs.readFile(path.join(dir, asset.file));
    cache.set(name, body);
    return body;
  };
  const page = (route: string, handle: Endpoint['handle']): Endpoint => ({ route, access: 'public', errors: 'problem', handle });
  const pageEndpoint = page(GRAPHIQL_PATH, async () =>
    reply(200, PAGE, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...SECURITY_HEADERS }),
  );
  const initEndpoint = page(`${GRAPHIQL_PATH}/assets/init.js`, async () =>
    reply(200, INIT, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache', ...SECURITY_HEADERS }),
  );
  const assetEndpoint = page(`${GRAPHIQL_PATH}/assets/{asset}`, async (exchange) =>
    reply(200, await read(exchange.params.asset), {
      'content-type': ASSETS[exchange.params.asset].type,
      'cache-control': 'public, max-age=3600',
      ...SECURITY_HEADERS,
    }),
  );
  return {
    resolve(exchange) {
      const { pathname } = exchange.url;
      const assetName = pathname.startsWith(`${GRAPHIQL_PATH}/assets/`)
        ? pathname.slice(`${GRAPHIQL_PATH}/assets/`.length)
        : undefined;
      const endpoint =
        pathname === GRAPHIQL_PATH || pathname === `${GRAPHIQL_PATH}/`
          ? pageEndpoint
          : assetName === 'init.js'
            ? initEndpoint
            : assetName !== undefined && Object.hasOwn(ASSETS, assetName)
              ? assetEndpoint
              : undefined;
      if (!endpoint) return { kind: 'not_found' };
      if (exchange.method !== 'GET' && exchange.method !== 'HEAD') return { kind: 'method_not_allowed', allow: ['GET', 'HEAD'] };
      const params: Record<string, string> = assetName ? { asset: assetName } : {};
      return { kind: 'found', endpoint, params };
    },
  };
}

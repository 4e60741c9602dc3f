// `npm run token -- --tenant ten_... --scope "ai.assist catalog.admin" [--sub usr_...] [--ttl 900]`
// Mints a token signed with the embedded development key under DATA_DIR (created if missing).
import { parseArgs } from 'node:util';
import { loadPlatformConfig } from '../config/config.js';
import { configOrExit } from '../config/config-or-exit.js';
import { isId, newId } from '../ids.js';
import { ensureDevKeyPair, mintToken } from './dev-keys.js';

const USAGE = `Usage: npm run token -- [--tenant ten_...] [--scope "catalog.read ai.assist"] [--sub usr_...] [--ttl 900]

Mints a token signed by the development key under DATA_DIR (created if missing), which a system
started without AUTH_JWKS_URL / AUTH_PUBLIC_KEY trusts.

  --tenant  tenant id, the token's tid claim (default: a new one)
  --scope   space-separated scopes (default: "catalog.read ai.assist")
  --sub     subject (default: a new user id)
  --ttl     lifetime in seconds, 1 to 900 (default: 900; tokens live at most 15 minutes)
  --help    this text

Printed to a terminal: the two headers to send. Piped: the token alone.`;

function usageError(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      options: {
        tenant: { type: 'string' },
        scope: { type: 'string', default: 'catalog.read ai.assist' },
        sub: { type: 'string' },
        ttl: { type: 'string', default: '900' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    // Unknown flags, a missing value, a stray argument: parseArgs says which in its message.
    return usageError((error as Error).message);
  }
}

const values = parse();
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const tenant = values.tenant ?? newId('tenant');
if (!isId('tenant', tenant)) usageError(`--tenant must be a tenant id such as ${newId('tenant')}`);
const ttl = Number(values.ttl);
if (!Number.isInteger(ttl) || ttl < 1 || ttl > 900) {
  usageError('--ttl must be a whole number of seconds from 1 to 900 (tokens live at most 15 minutes)');
}
const config = configOrExit(loadPlatformConfig);
const keys = await ensureDevKeyPair(config.dataDir);
const token = await mintToken(keys.privateJwk, {
  sub: values.sub ?? newId('user'),
  tid: tenant,
  scope: values.scope,
  ttlSeconds: ttl,
});
if (process.stdout.isTTY) {
  console.log(`# tenant ${tenant}, scope "${values.scope}", valid ${ttl}s; send both headers:`);
  console.log(`Authorization: Bearer ${token}`);
  console.log(`X-Tenant-Id: ${tenant}`);
} else {
  process.stdout.write(token);
}

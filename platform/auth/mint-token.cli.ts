// `npm run token -- --tenant ten_... --scope "ai.assist catalog.admin" [--sub usr_...] [--ttl 900]`
// Mints a token signed with the embedded development key under DATA_DIR (created if missing).
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/config.js';
import { isId, newId } from '../ids.js';
import { ensureDevKeyPair, mintToken } from './dev-keys.js';

const { values } = parseArgs({
  options: {
    tenant: { type: 'string' },
    scope: { type: 'string', default: 'catalog.read ai.assist' },
    sub: { type: 'string' },
    ttl: { type: 'string', default: '900' },
  },
});
const tenant = values.tenant ?? newId('tenant');
if (!isId('tenant', tenant)) {
  console.error(`--tenant must be a tenant id such as ${newId('tenant')}`);
  process.exit(2);
}
const ttl = Number(values.ttl);
if (!Number.isInteger(ttl) || ttl < 1 || ttl > 900) {
  console.error('--ttl must be a whole number of seconds from 1 to 900 (tokens live at most 15 minutes)');
  process.exit(2);
}
const config = loadConfig();
const keys = await ensureDevKeyPair(config.dataDir);
const token = await mintToken(keys.privateJwk, {
  sub: values.sub ?? newId('user'),
  tid: tenant,
  scope: values.scope!,
  ttlSeconds: ttl,
});
if (process.stdout.isTTY) {
  console.log(`# tenant ${tenant}, scope "${values.scope}", valid ${ttl}s; send both headers:`);
  console.log(`Authorization: Bearer ${token}`);
  console.log(`X-Tenant-Id: ${tenant}`);
} else {
  process.stdout.write(token);
}

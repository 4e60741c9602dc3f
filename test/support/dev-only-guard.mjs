// Loaded with `node --import` in front of a built entry point by test/e2e/production-build.test.ts:
// reports every module the process loads from a package that only development needs (the
// lockfile's `dev: true` entries), so the test proves a production install would run it.
import fs from 'node:fs';
import { registerHooks } from 'node:module';

const lock = JSON.parse(fs.readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'));
const devOnly = Object.entries(lock.packages)
  .filter(([location, entry]) => location && entry.dev)
  .map(([location]) => `/${location}/`);
const reported = new Set();

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    const hit = devOnly.find((location) => resolved.url.includes(location));
    if (hit && !reported.has(hit)) {
      reported.add(hit);
      process.stderr.write(`[dev-only module] ${resolved.url}\n`);
    }
    return resolved;
  },
});

// `npm run docs:error-codes`: rewrites docs/error-codes.md from the registry (platform/errors/error-codes.ts).
import fs from 'node:fs/promises';
import { renderErrorCodesDoc } from './error-codes-doc.js';
import { ERROR_CODES_DOC } from './error-codes-doc.logic.js';
import { projectPath } from '../project-files.js';

await fs.writeFile(projectPath(ERROR_CODES_DOC), await renderErrorCodesDoc());
console.log(`wrote ${ERROR_CODES_DOC}`);

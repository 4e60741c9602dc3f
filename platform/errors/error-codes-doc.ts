// Development only (it formats with Prettier, a dev dependency): left out of the production build
// by tsconfig.build.json, like prisma/schema-drift.ts.
import { format, resolveConfig } from 'prettier';
import { ERROR_CODES, ERROR_DETAIL_MEMBERS } from './error-codes.js';
import { ERROR_CODES_DOC, errorCodesMarkdown } from './error-codes-doc.logic.js';
import { projectPath } from '../project-files.js';

/**
 * docs/error-codes.md as `npm run docs:error-codes` writes it: the registry's table formatted as
 * `npm run format:check` wants it. A dev tool (Prettier is a devDependency); nothing at run time
 * imports it.
 */
export async function renderErrorCodesDoc(): Promise<string> {
  const file = projectPath(ERROR_CODES_DOC);
  return format(errorCodesMarkdown(ERROR_CODES, ERROR_DETAIL_MEMBERS), { ...(await resolveConfig(file)), filepath: file });
}

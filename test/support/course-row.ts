import { newId } from '../../platform/ids.js';

/** A Course row of `tenantId` to insert directly (paging, conditional requests, contract cases). */
export function courseRow(tenantId: string, overrides: Record<string, unknown> = {}) {
  const id = newId('course');
  return {
    id,
    tenantId,
    slug: `slug-${id.toLowerCase()}`,
    title: { en: `Course ${id}` },
    description: { en: 'About' },
    defaultLocale: 'en',
    visibility: 'org',
    authors: [{ userId: newId('user'), role: 'author', displayName: 'Ada' }],
    taxonomy: [],
    tags: ['e2e'],
    etag: `"${id.slice(-12).toLowerCase()}"`,
    ...overrides,
  };
}

/**
 * Accept-Language (BCP-47 with q-values) and locale-map resolution. Pure: the resolvers pass the
 * header in and get the best available locale back, falling back to the course's defaultLocale.
 */
export function parseAcceptLanguage(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part, index) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      const quality = q ? Number(q.slice(2)) : 1;
      return { tag: tag.trim(), quality: Number.isFinite(quality) ? quality : 0, index };
    })
    .filter(
      (entry) => entry.tag && entry.tag !== '*' && entry.quality > 0 && /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(entry.tag),
    )
    .sort((a, b) => b.quality - a.quality || a.index - b.index)
    .map((entry) => entry.tag);
}

/** Picks the key of `available` that best matches the preferences: exact, then language, then fallback. */
export function bestLocale(available: string[], preferred: string[], fallback: string): string | undefined {
  if (available.length === 0) return undefined;
  const lower = new Map(available.map((tag) => [tag.toLowerCase(), tag]));
  for (const tag of preferred) {
    const exact = lower.get(tag.toLowerCase());
    if (exact) return exact;
    const language = tag.toLowerCase().split('-')[0];
    const sameLanguage = available.find((candidate) => candidate.toLowerCase().split('-')[0] === language);
    if (sameLanguage) return sameLanguage;
  }
  if (lower.has(fallback.toLowerCase())) return lower.get(fallback.toLowerCase());
  return available[0];
}

export function resolveLocaleMap(
  map: Record<string, string> | null | undefined,
  preferred: string[],
  fallback: string,
): { locale: string; text: string } | undefined {
  if (!map) return undefined;
  const locale = bestLocale(Object.keys(map), preferred, fallback);
  return locale === undefined ? undefined : { locale, text: map[locale] };
}

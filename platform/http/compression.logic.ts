/**
 * Which content coding a reply gets (RFC 9110 §12.5.3): the client's Accept-Encoding, our
 * preference among equals (br, then gzip), and only for replies worth it.
 */
export type Coding = 'br' | 'gzip';

/** Below this a compressed body saves less than its headers and the CPU cost. */
export const COMPRESSION_THRESHOLD_BYTES = 1024;

const COMPRESSIBLE = /^(application\/(?:[\w.+-]*\+)?json|application\/javascript|text\/[\w.+-]+|image\/svg\+xml)\b/i;

/** The coding to use, or undefined for identity. */
export function chooseCoding(acceptEncoding: string | undefined): Coding | undefined {
  if (!acceptEncoding) return undefined;
  const weights = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    const weight = q === undefined ? 1 : Number(q);
    weights.set(name, Number.isFinite(weight) ? weight : 0);
  }
  const weightOf = (coding: Coding) => weights.get(coding) ?? weights.get('*') ?? 0;
  const best = (['br', 'gzip'] as const).filter((coding) => weightOf(coding) > 0);
  best.sort((a, b) => weightOf(b) - weightOf(a));
  return best[0];
}

/** Whether a reply of this status, type, length and existing coding is worth compressing. */
export function worthCompressing(reply: {
  status: number;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  bytes: number;
}): boolean {
  if (reply.status === 204 || reply.status === 304 || reply.contentEncoding) return false;
  return reply.bytes >= COMPRESSION_THRESHOLD_BYTES && COMPRESSIBLE.test(reply.contentType ?? '');
}

/** Request codings we read: none but identity. Anything else is 415 (RFC 9110 §8.4.1). */
export function acceptsRequestCoding(contentEncoding: string | undefined): boolean {
  if (contentEncoding === undefined) return true;
  return contentEncoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .every((coding) => coding === '' || coding === 'identity');
}

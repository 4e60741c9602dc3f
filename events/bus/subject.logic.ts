/**
 * NATS subject matching: tokens split on '.', '*' matches one token, '>' (last) one or more.
 */
export function subjectMatches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return i === f.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (f[i] !== '*' && f[i] !== s[i]) return false;
  }
  return f.length === s.length;
}

export function isValidSubject(subject: string, allowWildcards = false): boolean {
  if (!subject || /\s/.test(subject)) return false;
  const tokens = subject.split('.');
  return tokens.every((token, i) => {
    if (token === '') return false;
    if (token === '>') return allowWildcards && i === tokens.length - 1;
    if (token === '*') return allowWildcards;
    return !/[*>]/.test(token);
  });
}

/** Path patterns of the route table: `{name}` matches exactly one non-empty segment. */
export interface CompiledPath {
  regex: RegExp;
  names: string[];
}

export function compilePath(pattern: string): CompiledPath {
  const names: string[] = [];
  const source = pattern
    .split('/')
    .map((segment) => {
      const param = /^\{([A-Za-z][A-Za-z0-9]*)\}$/.exec(segment);
      if (!param) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(param[1]);
      return '([^/]+)';
    })
    .join('/');
  return { regex: new RegExp(`^${source}$`), names };
}

/**
 * The raw (still percent-encoded) segments by name, or undefined when the path does not match.
 * Decoding is left to the caller so a malformed escape is a 400 rather than "no such route".
 */
export function matchPath(compiled: CompiledPath, pathname: string): Record<string, string> | undefined {
  const match = compiled.regex.exec(pathname);
  if (!match) return undefined;
  return Object.fromEntries(compiled.names.map((name, index) => [name, match[index + 1]]));
}

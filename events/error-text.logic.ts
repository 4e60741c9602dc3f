/** An error's message on one line, at most `max` characters: for logs, headers and stored errors. */
export function oneLine(error: unknown, max = 500): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s+/g, ' ').trim().slice(0, max);
}

/**
 * A child process's retained memory, measured through its inspector (started with
 * `--inspect=127.0.0.1:<port>`): a full garbage collection first, then the heap's use.
 *
 * Why: RSS right after a flood measures V8's heap-growth heuristics as much as what the process
 * keeps. On a loaded machine V8 lets a few hundred MB of garbage wait for the next major GC (seen in
 * CI: the same flood left +90 MB or +370 MB), so a bound on retention is asserted after a forced
 * collection, when only what is still referenced remains.
 */

export interface RetainedMemory {
  /** V8 heap in use after the collection. */
  heapUsedBytes: number;
  /** ArrayBuffer and Buffer backing stores outside the V8 heap, after the collection. */
  backingStoreBytes: number;
}

interface InspectorTarget {
  webSocketDebuggerUrl: string;
}

interface ProtocolAnswer {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** The one debugging target of a Node process listening on `port`. */
async function debuggerUrl(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/json/list`);
  const targets = (await response.json()) as InspectorTarget[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${port}`);
  return url;
}

/** Sends the protocol calls in order over one connection; resolves with each call's result. */
async function callInOrder(url: string, methods: string[]): Promise<Record<string, unknown>[]> {
  const socket = new WebSocket(url);
  const results: Record<string, unknown>[] = [];
  return new Promise((resolve, reject) => {
    const send = (index: number) => socket.send(JSON.stringify({ id: index + 1, method: methods[index] }));
    socket.addEventListener('open', () => send(0));
    socket.addEventListener('error', () => reject(new Error(`inspector connection to ${url} failed`)));
    socket.addEventListener('message', (event) => {
      const answer = JSON.parse(String(event.data)) as ProtocolAnswer;
      if (answer.id === undefined) return; // an event, not an answer
      if (answer.error) {
        socket.close();
        reject(new Error(`${methods[answer.id - 1]}: ${answer.error.message}`));
        return;
      }
      results.push(answer.result ?? {});
      if (results.length < methods.length) send(results.length);
      else {
        socket.close();
        resolve(results);
      }
    });
  });
}

/** Runs a full collection in the process inspected on `port`, then reads what is left. */
export async function retainedMemory(port: number): Promise<RetainedMemory> {
  const url = await debuggerUrl(port);
  const [, usage] = await callInOrder(url, ['HeapProfiler.collectGarbage', 'Runtime.getHeapUsage']);
  return {
    heapUsedBytes: Number(usage?.usedSize),
    backingStoreBytes: Number(usage?.backingStorageSize ?? 0),
  };
}

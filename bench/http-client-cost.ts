// `npx tsx bench/http-client-cost.ts`: the CPU one JSON POST costs this process (client and a local
// node:http server together, `process.cpuUsage`) through the three HTTP clients a Node service has:
// the WHATWG `fetch`, `node:http` with a keep-alive agent, and undici's `request` (a kept-alive
// pool). The answer is a chat completion's size; 10 calls in flight, as assist's 10 connections.
// The server's share is the same in every row, so the differences are the clients'. It is why the
// provider adapters and the gateway's subgraph calls use undici's `request`
// (results/2026-11-28T2241-assist-provider-request.md).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { cpuPerCallRounds, heading, table } from './lib.js';

const CALLS = Number(process.env.BENCH_HTTP_CALLS ?? 3000);
const IN_FLIGHT = 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const answer = JSON.stringify({
  id: 'chatcmpl-bench',
  model: 'gpt-4o-mini',
  choices: [{ message: { role: 'assistant', content: 'hello '.repeat(40) }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 20 },
});
const payload = JSON.stringify({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'I have had a headache for two days.' }],
});
const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench' };

type Call = () => Promise<unknown>;

function clients(url: URL): Array<{ name: string; call: Call; close: () => Promise<void> }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const pool = new Agent({ connections: 16, keepAliveTimeout: 30_000, pipelining: 1 });
  const viaHttp: Call = () =>
    new Promise((resolve, reject) => {
      const request = http.request(
        url,
        { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(payload) } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  return [
    {
      name: 'WHATWG fetch',
      call: async () => (await fetch(url, { method: 'POST', headers, body: payload })).json(),
      close: async () => {},
    },
    { name: 'node:http, keep-alive agent', call: viaHttp, close: async () => agent.destroy() },
    {
      name: "undici's request",
      call: async () => {
        const response = await pool.request({ origin: url.origin, path: url.pathname, method: 'POST', headers, body: payload });
        return JSON.parse(await response.body.text());
      },
      close: () => pool.close(),
    },
  ];
}

const server = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.setHeader('content-type', 'application/json');
    response.end(answer);
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`);
const candidates = clients(url);
let rows: Array<Array<string | number>> = [];
try {
  rows = await cpuPerCallRounds(
    candidates.map((client) => ({ name: client.name, run: client.call })),
    { calls: CALLS, inFlight: IN_FLIGHT, rounds: ROUNDS },
  );
} finally {
  await Promise.all(candidates.map((client) => client.close()));
  server.close();
}
heading(`HTTP client cost: one JSON POST, ${IN_FLIGHT} in flight`);
console.log(table(['>round', 'client', '>calls', '>CPU µs per call (client + server)', '>wall ms'], rows));

// An OpenAI-compatible chat completions server that answers at once (~0.1 ms): the shared upstream
// of the assist-peer scenario, so our gateway and Portkey's are measured in front of the same model.
// `PORT=... npx tsx bench/fake-openai.ts`; GET /healthz answers once it listens.
import http from 'node:http';

const port = Number(process.env.PORT ?? 0);
let served = 0;

const server = http.createServer((req, res) => {
  if (req.url === '/healthz') return void res.writeHead(200, { 'content-type': 'text/plain' }).end(`ok ${served}`);
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    served++;
    let model = 'fake-model';
    try {
      model = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: string }).model ?? model;
    } catch {
      // a body that is not JSON gets the default model name
    }
    const body = JSON.stringify({
      id: `chatcmpl-${served}`,
      object: 'chat.completion',
      created: 1_780_000_000,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Self-care: rest, fluids; see a GP if it lasts.' },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 42, completion_tokens: 12, total_tokens: 54 },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');

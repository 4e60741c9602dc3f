// A slow-body attacker for the connection bounds test (test/reliability/hostile-shared-resources.test.ts):
// opens COUNT connections to PORT at RATE per second, each a POST declaring a 1 MB JSON body
// without a token; it sends one byte of the body, then one more per second to every connection
// still open. It stops once every connection is closed (or after MAX_SECONDS) and reports what
// the server did with them as one JSON line.
import net from 'node:net';

const [port, count, rate, maxSeconds] = process.argv.slice(2).map(Number);
const open = new Set();
let ending = false;
const tally = { opened: 0, failedToConnect: 0, answered: 0, status401: 0, closedByServer: 0, stillOpen: 0, statuses: {} };
const request = 'POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{';

function connectOne() {
  const socket = net.connect(port, '127.0.0.1');
  let head = '';
  let connected = false;
  socket.on('connect', () => {
    connected = true;
    tally.opened += 1;
    open.add(socket);
    socket.write(request);
  });
  socket.on('data', (chunk) => {
    if (head.length >= 12) return;
    head += chunk.toString('latin1');
    if (head.length < 12) return;
    tally.answered += 1;
    const status = head.slice(9, 12);
    tally.statuses[status] = (tally.statuses[status] ?? 0) + 1;
    if (status === '401') tally.status401 += 1;
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    if (ending) return;
    if (!connected) tally.failedToConnect += 1;
    else if (open.delete(socket)) tally.closedByServer += 1;
    settled();
  });
}

let started = 0;
const perTick = Math.max(1, Math.round(rate / 100));
const opener = setInterval(() => {
  for (let i = 0; i < perTick && started < count; i++, started++) connectOne();
  if (started >= count) clearInterval(opener);
}, 10);
const drip = setInterval(() => {
  for (const socket of open) socket.write('a');
}, 1_000);
const deadline = setTimeout(finish, maxSeconds * 1_000);

function settled() {
  if (started >= count && tally.opened + tally.failedToConnect === count && open.size === 0) finish();
}

function finish() {
  if (ending) return;
  ending = true;
  clearInterval(opener);
  clearInterval(drip);
  clearTimeout(deadline);
  tally.stillOpen = open.size;
  for (const socket of open) socket.destroy();
  process.stdout.write(`${JSON.stringify(tally)}\n`, () => process.exit(0));
}

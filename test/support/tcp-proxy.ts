import net from 'node:net';

/**
 * A TCP proxy in front of a dependency (Postgres, Redis, NATS) that a test can cut and restore:
 * cutting drops every open connection and refuses new ones, as an outage or a partition would.
 */
export interface Proxy {
  url: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startProxy(target: URL): Promise<Proxy> {
  let down = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target.toString());
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

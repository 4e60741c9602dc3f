import net from 'node:net';

/**
 * A TCP proxy in front of a dependency (Postgres, Redis, NATS) that a test can cut and restore:
 * cutting drops every open connection and refuses new ones, as an outage or a partition would.
 * Freezing keeps every connection open and carries nothing either way (a half-open link: a
 * frozen server or a silent partition) until thawed.
 */
export interface Proxy {
  url: string;
  cut(): void;
  restore(): void;
  freeze(): void;
  /**
   * Freezes the connections open now and lets new ones through: the old link is half-open while
   * the service answers a client that reconnects (a dead NAT entry, a failover behind one address).
   */
  freezeExisting(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startProxy(target: URL): Promise<Proxy> {
  let down = false;
  let frozen = false;
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
    if (frozen) for (const socket of [client, upstream]) socket.pause();
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
    freeze() {
      frozen = true;
      for (const socket of sockets) socket.pause();
    },
    freezeExisting() {
      for (const socket of sockets) socket.pause();
    },
    thaw() {
      frozen = false;
      for (const socket of sockets) socket.resume();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

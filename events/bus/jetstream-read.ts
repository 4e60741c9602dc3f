import { nanos, nuid, type MsgHdrs } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { Headers, ReadPagesOptions, StoredMessage } from './event-bus.js';

const DEFAULT_PAGE_SIZE = 256;

export function toHeaders(h: MsgHdrs | undefined): Headers {
  const out: Headers = {};
  if (!h) return out;
  for (const key of h.keys()) out[key] = h.get(key);
  return out;
}

/**
 * Stored messages of a stream in sequence order, a page at a time, through an ephemeral,
 * unacknowledged consumer: it reads a filtered stream in order without touching any durable
 * consumer's position, and with `headersOnly` the server sends no bodies. The consumer is removed
 * when the reader ends or is left (a `break` out of the loop).
 */
export async function* readPages(
  jsm: JetStreamManager,
  js: JetStreamClient,
  stream: string,
  opts: ReadPagesOptions,
): AsyncGenerator<StoredMessage[]> {
  const name = `read_${nuid.next()}`;
  const info = await jsm.consumers.add(stream, {
    name,
    ack_policy: AckPolicy.None,
    ...(opts.fromSeq && opts.fromSeq > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: opts.fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
    filter_subject: opts.filterSubject,
    inactive_threshold: nanos(60_000),
    mem_storage: true,
    ...(opts.headersOnly ? { headers_only: true } : {}),
  });
  const toSeq = opts.toSeq ?? Number.POSITIVE_INFINITY;
  const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  try {
    let remaining = Math.min(info.num_pending, opts.maxCount ?? Number.POSITIVE_INFINITY);
    const reader = await js.consumers.get(stream, name);
    while (remaining > 0) {
      const batch = await reader.fetch({ max_messages: Math.min(remaining, pageSize), expires: 5_000 });
      const page: StoredMessage[] = [];
      let got = 0;
      let pastEnd = false;
      for await (const m of batch) {
        got++;
        if (m.seq > toSeq) pastEnd = true;
        if (pastEnd) continue;
        page.push({ stream, seq: m.seq, subject: m.subject, data: m.data, headers: toHeaders(m.headers), time: m.time });
        remaining--;
      }
      if (page.length) yield page;
      if (pastEnd) break;
      if (got === 0) {
        // Messages deleted since the consumer counted them never arrive; anything else that ends
        // a fetch empty-handed (a server restart, a lost pull) must not pass for the end of the
        // range: the order guard takes this read as every message up to `toSeq`.
        await expectNothingLeft(jsm, stream, name, toSeq);
        break;
      }
    }
  } finally {
    await jsm.consumers.delete(stream, name).catch(() => undefined);
  }
}

/** Throws unless the reading consumer has nothing left to deliver up to `toSeq`. */
async function expectNothingLeft(jsm: JetStreamManager, stream: string, reader: string, toSeq: number): Promise<void> {
  const info = await jsm.consumers.info(stream, reader);
  const deliveredThrough = info.delivered.stream_seq;
  if (info.num_pending > 0 && deliveredThrough < toSeq)
    throw new Error(
      `stream ${stream}: read ended at sequence ${deliveredThrough} with ${info.num_pending} message(s) still pending`,
    );
}

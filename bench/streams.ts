// The streams and subjects of one bench run. The event worker creates or updates every stream of its
// configuration, so each run names all of them BENCH_<id>_* and prefixes every subject: a shared
// NATS server's other streams are never touched, and the run removes exactly what it made.
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export interface BenchStreams {
  id: string;
  /** BENCH_SUBJECT_PREFIX of bench/events-worker.ts. */
  prefix: string;
  /** The worker's stream variables, every one of them (the worker refuses to start otherwise). */
  env: {
    CATALOG_STREAM: string;
    CATALOG_DLQ_STREAM: string;
    CONTENT_STREAM: string;
    AUTHORING_STREAM: string;
    GDPR_STREAM: string;
    AUDIT_STREAM: string;
    AI_STREAM: string;
    BENCH_SUBJECT_PREFIX: string;
    /** The bench plays the content service: the worker creates the producers' streams too. */
    CREATE_PRODUCER_STREAMS: 'true';
  };
}

export function benchStreams(): BenchStreams {
  const id = randomBytes(3).toString('hex').toUpperCase();
  const prefix = `bench${id}.`;
  const name = (stream: string) => `BENCH_${id}_${stream}`;
  return {
    id,
    prefix,
    env: {
      CATALOG_STREAM: name('CATALOG'),
      CATALOG_DLQ_STREAM: name('CATALOG_DLQ'),
      CONTENT_STREAM: name('CONTENT'),
      AUTHORING_STREAM: name('AUTHORING'),
      GDPR_STREAM: name('GDPR'),
      AUDIT_STREAM: name('AUDIT'),
      AI_STREAM: name('AI'),
      BENCH_SUBJECT_PREFIX: prefix,
      CREATE_PRODUCER_STREAMS: 'true',
    },
  };
}

/** Deletes every stream of the run, whichever part created it. */
export async function removeBenchStreams(natsUrl: string, streams: BenchStreams): Promise<void> {
  const nc = await connect({ servers: natsUrl, name: 'bench-cleanup' });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(`BENCH_${streams.id}_`)) await jsm.streams.delete(name).catch(() => undefined);
    }
  } finally {
    await nc.close();
  }
}

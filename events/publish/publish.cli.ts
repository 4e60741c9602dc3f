// `npm run events:publish -- <file.json> [more.json ...]`: publishes consumed events (one envelope,
// or an array of them, per file) to NATS_URL, the way their producers would. Missing envelope
// members a publisher computes are filled in (events/publish/publish.logic.ts); the payload is checked
// against our copy of the producer's schema first, so a mistake is reported here, not dead-lettered.
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { ConfigError, loadPlatformConfig } from '../../platform/config/config.js';
import { newUlid } from '../../platform/ids.js';
import { silentLogger } from '../../platform/observability/logger.js';
import { connectJetStreamBus } from '../bus/jetstream-bus.js';
import { subjectFor } from '../envelope.js';
import { streamSpecs } from '../streams.js';
import type { StreamStore } from '../bus/event-bus.js';
import { loadEventsSlice, type EventsConfig } from '../config.js';
import { completeEnvelope } from './publish.logic.js';
import { loadSchemaRegistry } from '../schemas/registry.js';

const USAGE = `Usage: npm run events:publish -- <file.json> [more.json ...]

Publishes consumed events (content.play_package.built, authoring.course_draft.published,
gdpr.subject_request.received) to the JetStream server at NATS_URL, as their producers would.
Each file holds one envelope or an array of them; eventId, occurredAt, ingestedAt, schemaUri
(with the digest of our copy of the schema), correlationId, causationId and source are filled
in when absent. Examples: test/fixtures/consumed-events/*.json.

  NATS_URL=nats://127.0.0.1:4222 npm run events:publish -- test/fixtures/consumed-events/content.play_package.built.v1.json`;

function fail(message: string, code = 2): never {
  console.error(message);
  process.exit(code);
}

const { values, positionals } = parseArgs({ options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!positionals.length) fail(USAGE);

let config;
try {
  config = loadPlatformConfig();
} catch (error) {
  fail(error instanceof ConfigError ? error.message : String(error));
}
if (!config.natsUrl)
  fail(
    'events:publish needs NATS_URL: the in-process bus of `npm start` without it lives inside that process (its demo catalog shows what events make).',
  );

const registry = loadSchemaRegistry();
const source = { service: 'events-publish', instance: os.hostname(), commit: config.service.commit };
const envelopes = positionals.flatMap((file) => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    return fail(`${file}: ${(error as Error).message}`);
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).map((draft, i) => {
    try {
      return completeEnvelope(draft, { registry, now: new Date(), newId: () => newUlid(), source });
    } catch (error) {
      return fail(`${file}${Array.isArray(parsed) ? ` [${i}]` : ''}: ${(error as Error).message}`);
    }
  });
});

const bus = await connectJetStreamBus(config.natsUrl, { logger: silentLogger }).catch((error: unknown) =>
  fail(`NATS_URL ${config.natsUrl}: ${(error as Error).message}`, 1),
);
let subject = '';
try {
  for (const envelope of envelopes) {
    subject = subjectFor(envelope.eventType, envelope.eventVersion);
    const ack = await bus.publish(subject, Buffer.from(JSON.stringify(envelope)), {
      msgId: envelope.eventId,
      headers: { 'Content-Type': 'application/json' },
    });
    console.log(
      `${ack.duplicate ? 'already on the stream' : 'published'}: ${subject} eventId ${envelope.eventId} -> ${ack.stream} #${ack.seq}`,
    );
  }
} catch (error) {
  const missing = await missingStream(bus, loadEventsSlice(process.env, config).events, subject);
  fail(`publish failed: ${missing ? `${missing} (${(error as Error).message})` : (error as Error).message}`, 1);
} finally {
  await bus.close();
}

/**
 * JetStream answers a publish no stream takes as "no responders", which the client reports as
 * "jetstream is not enabled" (issue #26): on a fresh broker the stream is what is missing. Names
 * it, and how it comes to exist, when that is the case.
 */
async function missingStream(bus: StreamStore, events: EventsConfig, subject: string): Promise<string | undefined> {
  const spec = streamSpecs(events).find((candidate) =>
    candidate.subjects.some((pattern) => subject.startsWith(pattern.replace(/>$/, ''))),
  );
  if (!spec || (await bus.streamConfig(spec.name).catch(() => 'unknown'))) return undefined;
  return (
    `no stream takes ${subject}: stream ${spec.name} (${spec.subjects.join(', ')}) does not exist. ` +
    `Its producer creates it; for development, start the system once with NATS_URL and ` +
    `CREATE_PRODUCER_STREAMS=true (README, "With real services")`
  );
}

import protobuf from 'protobufjs';

/**
 * The part of OTLP's trace protobuf (opentelemetry-proto, collector/trace/v1) a test reads, so the
 * test receiver decodes `http/protobuf` and `grpc` exports into the same shape as `http/json`.
 * Field numbers are the specification's; fields left out are skipped by the decoder.
 */
const PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { repeated Span spans = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  repeated KeyValue attributes = 9;
  repeated Link links = 13;
}
message Link { bytes trace_id = 1; bytes span_id = 2; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
`;

const Request = protobuf.parse(PROTO, { keepCase: false }).root.lookupType('otlp.ExportTraceServiceRequest');

const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId']);

/** The request as OTLP/JSON spells it: camelCase members, ids in hex, enums as numbers. */
export function decodeTraceRequest(body: Uint8Array): unknown {
  const message = Request.decode(body);
  return hexIds(Request.toObject(message, { longs: Number, bytes: String, defaults: false, enums: Number }));
}

function hexIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hexIds);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, member]) => [
      key,
      ID_FIELDS.has(key) && typeof member === 'string' ? Buffer.from(member, 'base64').toString('hex') : hexIds(member),
    ]),
  );
}

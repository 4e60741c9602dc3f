/**
 * An event as a consumer's inbox knows it, as one string: its tenant and its id, since producers
 * choose event ids and two tenants' producers may choose the same one (events/ledger/inbox.ts). A
 * missing tenant is the inbox's "any tenant" ('').
 */
export function eventKey(event: { tenantId?: string; eventId: string }): string {
  return `${event.tenantId ?? ''}\u0000${event.eventId}`;
}

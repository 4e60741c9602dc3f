/**
 * Phase-0 baseline of the rollout (spec, "Rollout phases"): one global routing rule with a hosted
 * provider as primary and `mock` as fallback, and prompt templates for the feature keys in use.
 */
export const BASELINE_TEMPLATES: Array<{ featureKey: string; body: string }> = [
  {
    featureKey: 'patient_chart.note_summary',
    body: 'Summarise the following clinical note for a clinician in {{locale}}. Be factual and concise; do not add information.\n\nNote:\n{{note}}',
  },
  {
    featureKey: 'portal.triage',
    body: 'A patient describes their concern in the portal. Suggest the appropriate care pathway (self-care, primary care, urgent care, emergency) with a one-sentence reason, in {{locale}}.\n\nMessage:\n{{message}}',
  },
  {
    featureKey: 'virtual_care.soap_scaffold',
    body: 'Draft a SOAP note scaffold (Subjective, Objective, Assessment, Plan headings with bullet prompts) in {{locale}} from this visit transcript. Leave clinical judgements to the clinician.\n\nTranscript:\n{{transcript}}',
  },
  {
    // Phase 3: the radiology pre-read feature, meant for a tenant rule routing it to the managed-cloud provider (bedrock).
    featureKey: 'radiology.pre_read',
    body: 'Draft a preliminary read of this imaging study for a radiologist to verify, in {{locale}}: findings, then an impression. Mark every statement as preliminary; do not state a final diagnosis.\n\nModality and region: {{study}}\n\nClinical question:\n{{question}}\n\nTechnologist notes:\n{{notes}}',
  },
  {
    featureKey: 'medication.reconciliation_assist',
    body: 'Compare the two medication lists and list discrepancies (missing, duplicated, dose changes) for pharmacist review, in {{locale}}.\n\nHome medications:\n{{home_medications}}\n\nHospital medications:\n{{hospital_medications}}',
  },
];

/**
 * Phase 2: "HITLPolicy=required for patient_chart.note_summary". Global, so every tenant has it;
 * a tenant override (setHitlPolicy) or the hitl.enabled flag (rollback) changes it per tenant.
 */
export const BASELINE_HITL_POLICIES: Array<{ featureKey: string; mode: 'required' | 'optional' }> = [
  { featureKey: 'patient_chart.note_summary', mode: 'required' },
];

export function baselineRoutingRule(hostedModel: string) {
  return {
    primary: { provider: 'openai-compatible', model: hostedModel },
    fallbacks: [{ provider: 'mock', model: 'mock-1' }],
  };
}

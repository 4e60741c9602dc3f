/**
 * The built-in content classifier: word lists and patterns, no model. It is a conservative
 * baseline for the phase-2 rule "moderation classifier required for patient_chart.note_summary":
 * clinical text talks about suicide, violence and sexual health all the time, so the content
 * rules only match intent, instructions and explicit material, never the clinical vocabulary
 * itself ("denies suicidal ideation" passes, "how to kill myself" does not). For real
 * classification point AI_MODERATION_CLASSIFIER at an OpenAI-compatible moderation endpoint; the
 * PHI rules below still run on outputs either way.
 */

export type ModerationStage = 'input' | 'output';

export type ModerationCategory = 'self_harm' | 'violence' | 'sexual' | 'sexual_minors' | 'phi' | (string & {});

/** Why a text was flagged: the rule and how often it matched. Never the matched text (it may be PHI). */
export interface ModerationReason {
  category: ModerationCategory;
  rule: string;
  count: number;
  /** A remote classifier's score for the category, when it gives one. */
  score?: number;
}

export interface ModerationVerdict {
  flagged: boolean;
  classifier: string;
  categories: ModerationCategory[];
  reasons: ModerationReason[];
}

interface Rule {
  id: string;
  category: ModerationCategory;
  pattern: RegExp;
}

const SELF = String.raw`(?:myself|yourself|himself|herself|themselves|oneself)`;

/** Content rules: run on the rendered prompt (input) and on the provider's answer (output). */
export const CONTENT_RULES: readonly Rule[] = [
  {
    id: 'self_harm.intent',
    category: 'self_harm',
    pattern: new RegExp(
      String.raw`\b(?:i\s*(?:'m|am)\s+going\s+to|i\s+(?:want|wanna|plan|intend|need)\s+to|i\s+will|i'll)\s+(?:kill|hurt|harm|cut|hang|overdose)\s+myself\b|\bend\s+my\s+(?:own\s+)?life\b`,
      'gi',
    ),
  },
  {
    id: 'self_harm.instructions',
    category: 'self_harm',
    pattern: new RegExp(
      String.raw`\b(?:how\s+(?:to|do\s+i|can\s+i|should\s+i)|best\s+way\s+to|easiest\s+way\s+to|ways?\s+to|methods?\s+(?:of|for|to))\s+(?:kill(?:ing)?\s+${SELF}|commit(?:ting)?\s+suicide|suicide\b|self[-\s]?harm|cut(?:ting)?\s+${SELF}|overdos(?:e|ing)\s+(?:on\s+purpose|to\s+die))|\blethal\s+dose\b[^.]{0,60}\b(?:to\s+die|suicide|kill\s+${SELF})\b`,
      'gi',
    ),
  },
  {
    id: 'violence.threat',
    category: 'violence',
    pattern: new RegExp(
      String.raw`\bi\s*(?:'m|am)?\s*(?:will|'ll|going\s+to|gonna)\s+(?:kill|shoot|stab|murder|strangle|behead)\s+(?:you|him|her|them|everyone|everybody|somebody|someone|the\s+\w+)\b`,
      'gi',
    ),
  },
  {
    id: 'violence.weapons_instructions',
    category: 'violence',
    pattern: new RegExp(
      String.raw`\bhow\s+(?:to|do\s+i|can\s+i)\s+(?:make|build|assemble|synthesi[sz]e)\s+(?:a\s+|an\s+)?(?:bomb|pipe\s*bomb|explosives?|molotov(?:\s+cocktail)?|nerve\s+agent|sarin|ricin|ghost\s+gun)\b|\bshoot\s+up\s+(?:the|a|my)\s+(?:school|church|mosque|synagogue|hospital|clinic|office)\b`,
      'gi',
    ),
  },
  {
    id: 'sexual.explicit',
    category: 'sexual',
    pattern: new RegExp(
      String.raw`\b(?:porn(?:o|ography|ographic)?|xxx|blow\s?jobs?|hand\s?jobs?|cum\s?shots?|gang\s?bang|hardcore\s+sex|nude\s+pics?|nudes|sexting|erotic\s+(?:story|roleplay))\b`,
      'gi',
    ),
  },
  {
    id: 'sexual.minors',
    category: 'sexual_minors',
    pattern: new RegExp(
      String.raw`\b(?:child|children|minor|minors|underage|kid|kids|preteen|teen)\s+(?:porn(?:ography)?|nudes?|erotica|sexual\s+content)\b|\bsexual\s+content\s+(?:involving|with|of)\s+(?:a\s+)?(?:child|children|minors?|kids?)\b|\bcsam\b`,
      'gi',
    ),
  },
];

/** PHI rules: only on outputs. Inputs of clinical features carry PHI by design; outputs must not leak identifiers. */
export const PHI_RULES: readonly Rule[] = [
  {
    id: 'phi.mrn',
    category: 'phi',
    pattern: /\b(?:MRN|medical\s+record\s+(?:number|no\.?|#)|patient\s+(?:id|number))\s*[:#]?\s*[A-Z]{0,4}-?\d[\dA-Z-]{4,19}\b/gi,
  },
  {
    id: 'phi.ssn',
    category: 'phi',
    // 000, 666 and 9xx areas, 00 groups and 0000 serials are never issued.
    pattern:
      /\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b|\b(?:SSN|social\s+security\s+(?:number|no\.?|#))\s*[:#]?\s*\d{9}\b/gi,
  },
  {
    id: 'phi.email',
    category: 'phi',
    // Every part bounded (RFC 5321 lengths): an unbounded local part re-scans a long run of
    // dotted text from every start position, quadratic on a 100 kB output.
    pattern: /\b[A-Z0-9._%+-]{1,64}@(?:[A-Z0-9-]{1,63}\.){1,8}[A-Z]{2,24}\b/gi,
  },
  {
    id: 'phi.phone',
    category: 'phi',
    // North American (555-123-4567, (555) 123 4567, +1 555.123.4567) and international +CC numbers.
    pattern: /(?:\+1[\s.-]?)?(?:\(\d{3}\)\s?|\b\d{3}[\s.-])\d{3}[\s.-]\d{4}\b|\+(?:[2-9]\d{0,2})(?:[\s.-]?\d){7,12}\b/g,
  },
  {
    id: 'phi.dob',
    category: 'phi',
    pattern:
      /\b(?:DOB|D\.O\.B\.?|date\s+of\s+birth|born(?:\s+on)?|birth\s*date)\s*[:-]?\s*(?:\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d{4}-\d{2}-\d{2}|\d{1,2}\s+[A-Za-z]{3,9}\.?\s+\d{4}|[A-Za-z]{3,9}\.?\s+\d{1,2},?\s+\d{4})/gi,
  },
];

/** Folds look-alike characters and strips zero-width ones, so "ki\u200Bll my\u00ADself" cannot slip past a pattern. */
export function normaliseForModeration(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\u200B-\u200D\u2060\uFEFF\u00AD]/g, '')
    .replace(/[\u2018\u2019\u02BC]/g, "'")
    .replace(/\s+/g, ' ');
}

function apply(rules: readonly Rule[], text: string): ModerationReason[] {
  const reasons: ModerationReason[] = [];
  for (const rule of rules) {
    const count = text.match(rule.pattern)?.length ?? 0;
    if (count > 0) reasons.push({ category: rule.category, rule: rule.id, count });
  }
  return reasons;
}

export const LOCAL_CLASSIFIER = 'local-rules-v1';

export function verdictOf(classifier: string, reasons: ModerationReason[]): ModerationVerdict {
  const categories = [...new Set(reasons.map((r) => r.category))].sort();
  return { flagged: reasons.length > 0, classifier, categories, reasons };
}

/** The content rules on any text. */
export function classifyContent(text: string): ModerationReason[] {
  return apply(CONTENT_RULES, normaliseForModeration(text));
}

/** PHI identifiers in a text (outputs only). */
export function detectPhi(text: string): ModerationReason[] {
  return apply(PHI_RULES, normaliseForModeration(text));
}

/** The whole built-in classifier: content rules at both stages, PHI rules on outputs. */
export function classifyLocally(text: string, stage: ModerationStage): ModerationVerdict {
  const reasons = [...classifyContent(text), ...(stage === 'output' ? detectPhi(text) : [])];
  return verdictOf(LOCAL_CLASSIFIER, reasons);
}

/** Phase 2: features whose outputs (and prompts) must pass the classifier (AI_MODERATION_FEATURES). */
export function moderationRequired(featureKey: string, requiredFeatures: readonly string[]): boolean {
  return requiredFeatures.includes(featureKey) || requiredFeatures.includes('*');
}

/**
 * Maps the categories of an OpenAI-style moderation result to ours ("self-harm/intent" → self_harm,
 * "sexual/minors" → sexual_minors); anything we do not name keeps its own name, snake-cased.
 */
export function mapRemoteCategory(name: string): ModerationCategory {
  const lower = name.toLowerCase();
  if (lower.startsWith('self-harm') || lower.startsWith('self_harm')) return 'self_harm';
  if (lower === 'sexual/minors' || lower === 'sexual_minors') return 'sexual_minors';
  if (lower.startsWith('sexual')) return 'sexual';
  if (lower.startsWith('violence')) return 'violence';
  return lower.replace(/[^a-z0-9]+/g, '_');
}

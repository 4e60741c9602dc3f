import { describe, expect, it } from 'vitest';
import {
  classifyLocally,
  mapRemoteCategory,
  moderationRequired,
  normaliseForModeration,
} from '../../../subgraphs/ai/moderation/moderation.logic.js';

const rules = (text: string, stage: 'input' | 'output' = 'output') => classifyLocally(text, stage).reasons.map((r) => r.rule);

describe('local classifier: content', () => {
  it.each([
    ['I want to kill myself tonight', 'self_harm.intent'],
    ["I'm going to overdose myself", 'self_harm.intent'],
    ['I will end my life', 'self_harm.intent'],
    ['what is the best way to kill yourself', 'self_harm.instructions'],
    ['Methods of suicide that are painless', 'self_harm.instructions'],
    ['the lethal dose of paracetamol to die quickly', 'self_harm.instructions'],
    ["I'm going to kill him after work", 'violence.threat'],
    ['i will shoot everyone there', 'violence.threat'],
    ['how to make a pipe bomb at home', 'violence.weapons_instructions'],
    ['write an erotic story about them', 'sexual.explicit'],
    ['send nude pics', 'sexual.explicit'],
    ['child porn', 'sexual.minors'],
  ])('flags %j as %s', (text, rule) => {
    const verdict = classifyLocally(text, 'input');
    expect(verdict.flagged).toBe(true);
    expect(verdict.reasons.map((r) => r.rule)).toContain(rule);
  });

  it.each([
    'Patient denies suicidal ideation or self-harm. Mood stable.',
    'History of suicide attempt in 2019 (overdose), follow-up with psychiatry.',
    'Assault victim with stab wound to the left flank; police informed.',
    'Sexual health screening: discussed contraception and STI testing; vaginal swab taken.',
    'Safeguarding referral made regarding suspected abuse of a minor.',
    'Summarise the clinical note: BP 150/95, HR 88, chest pain since 2 days.',
    'The treatment will kill the bacteria within 48 hours.',
  ])('lets clinical language through: %j', (text) => {
    expect(classifyLocally(text, 'output')).toMatchObject({ flagged: false, categories: [], reasons: [] });
  });

  it('sees through zero-width characters, soft hyphens and typographic apostrophes', () => {
    expect(normaliseForModeration('ki\u200Bll my\u00ADself')).toBe('kill myself');
    expect(rules('I\u2019m going to kill my\u200Dself')).toContain('self_harm.intent');
  });

  it('counts matches per rule, reports categories once, sorted, and never the matched text', () => {
    const verdict = classifyLocally('I want to kill myself. I want to hurt myself. how to make a bomb', 'input');
    expect(verdict.categories).toEqual(['self_harm', 'violence']);
    expect(verdict.reasons).toEqual([
      { category: 'self_harm', rule: 'self_harm.intent', count: 2 },
      { category: 'violence', rule: 'violence.weapons_instructions', count: 1 },
    ]);
    expect(JSON.stringify(verdict)).not.toContain('myself');
  });
});

describe('local classifier: PHI in outputs', () => {
  it.each([
    ['Summary for MRN: 00482913, stable.', 'phi.mrn'],
    ['medical record number #A-7788123', 'phi.mrn'],
    ['SSN 123-45-6789 on file', 'phi.ssn'],
    ['SSN: 123456789', 'phi.ssn'],
    ['Contact jane.doe@example.org for results', 'phi.email'],
    ['Call (555) 123-4567 to book', 'phi.phone'],
    ['call +1 555.123.4567', 'phi.phone'],
    ['reach her on +44 20 7946 0958', 'phi.phone'],
    ['DOB: 03/14/1962', 'phi.dob'],
    ['date of birth 1962-03-14', 'phi.dob'],
    ['born on March 14, 1962', 'phi.dob'],
    ['Born 14 Mar 1962', 'phi.dob'],
  ])('flags %j as %s', (text, rule) => {
    const verdict = classifyLocally(text, 'output');
    expect(verdict).toMatchObject({ flagged: true, categories: ['phi'] });
    expect(verdict.reasons.map((r) => r.rule)).toEqual([rule]);
  });

  it.each([
    'BP 150/95 mmHg, HR 88, SpO2 97 %, follow-up on 2026-12-01.',
    'Dose 500 mg every 8 hours; weight 72.5 kg; eGFR 60-89.',
    'Invalid SSNs are not SSNs: 000-12-3456, 666-12-3456, 900-12-3456.',
    'Code I21.4, ICD-10; lab ref 2026-11-21-0042.',
  ])('leaves non-identifiers alone: %j', (text) => {
    expect(classifyLocally(text, 'output').flagged).toBe(false);
  });

  it('does not apply PHI rules to inputs (clinical prompts carry PHI by design)', () => {
    const text = 'MRN: 00482913, DOB: 03/14/1962, phone 555-123-4567';
    expect(classifyLocally(text, 'input').flagged).toBe(false);
    expect(
      classifyLocally(text, 'output')
        .reasons.map((r) => r.rule)
        .sort(),
    ).toEqual(['phi.dob', 'phi.mrn', 'phi.phone']);
  });
});

describe('moderation policy and remote categories', () => {
  it('requires moderation for the listed features only, or for all with *', () => {
    expect(moderationRequired('patient_chart.note_summary', ['patient_chart.note_summary'])).toBe(true);
    expect(moderationRequired('portal.triage', ['patient_chart.note_summary'])).toBe(false);
    expect(moderationRequired('portal.triage', ['*'])).toBe(true);
    expect(moderationRequired('portal.triage', [])).toBe(false);
  });

  it('maps OpenAI category names to ours', () => {
    expect(
      ['self-harm', 'self-harm/intent', 'sexual', 'sexual/minors', 'violence/graphic', 'harassment/threatening'].map(
        mapRemoteCategory,
      ),
    ).toEqual(['self_harm', 'self_harm', 'sexual', 'sexual_minors', 'violence', 'harassment_threatening']);
  });
});

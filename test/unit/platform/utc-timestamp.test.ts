import { describe, expect, it } from 'vitest';
import { utcTimestamp } from '../../../platform/db/utc-timestamp.logic.js';
import { seededRandom } from '../../support/seeded-random.js';

/** The general path: what the reads returned before the digit-by-digit one. */
const general = (text: string) => new Date(`${text.replace(' ', 'T')}Z`);

const pad = (value: number, width: number) => String(value).padStart(width, '0');

/** A random timestamp in Postgres's text form, with 0 to 6 fraction digits. */
function randomTimestamp(random: () => number): string {
  const int = (below: number) => Math.floor(random() * below);
  const date = `${pad(100 + int(9_900), 4)}-${pad(1 + int(12), 2)}-${pad(1 + int(28), 2)}`;
  const time = `${pad(int(24), 2)}:${pad(int(60), 2)}:${pad(int(60), 2)}`;
  const fractionDigits = int(7);
  const fraction = fractionDigits === 0 ? '' : `.${pad(int(10 ** fractionDigits), fractionDigits)}`;
  return `${date} ${time}${fraction}`;
}

describe('utcTimestamp: a Postgres timestamp read as UTC', () => {
  it('reads what Prisma stores (timestamp(3)) as the same instant in UTC', () => {
    expect(utcTimestamp('2026-11-29 13:04:05.678').toISOString()).toBe('2026-11-29T13:04:05.678Z');
    expect(utcTimestamp('2026-11-29 13:04:05').toISOString()).toBe('2026-11-29T13:04:05.000Z');
    expect(utcTimestamp('2026-11-29 13:04:05.1').toISOString()).toBe('2026-11-29T13:04:05.100Z');
    expect(utcTimestamp('2026-11-29 13:04:05.123999').toISOString()).toBe('2026-11-29T13:04:05.123Z');
  });

  it('answers as the general path does on 20,000 random timestamps (seed 20261129)', () => {
    const random = seededRandom(20_261_129);
    for (let i = 0; i < 20_000; i++) {
      const text = randomTimestamp(random);
      expect(utcTimestamp(text).getTime(), text).toBe(general(text).getTime());
    }
  });

  it('leaves every other form to the general path', () => {
    for (const text of [
      '0099-01-01 00:00:00 BC', // BC dates
      '0050-06-01 12:00:00', // a year Date.UTC would read as 1950
      '12345-01-01 00:00:00', // five-digit years
      'infinity',
      '-infinity',
      '2026-11-29 13:04:0x',
      '2026-11-29 13:04:05.12x',
      '2026-11-29T13:04:05',
    ]) {
      const ours = utcTimestamp(text).getTime();
      const theirs = general(text).getTime();
      expect(Number.isNaN(ours) ? 'NaN' : ours, text).toBe(Number.isNaN(theirs) ? 'NaN' : theirs);
    }
    expect(utcTimestamp('0050-06-01 12:00:00').getUTCFullYear()).toBe(50);
  });
});

import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  envBool,
  envDecimal,
  envInt,
  envKeyValuePairs,
  envList,
  envOneOf,
  envPatternList,
  envRatio,
  envString,
  envUrl,
} from '../../../platform/config/env.js';

const V = 'SOME_VARIABLE';
const env = (value: string | undefined) => ({ [V]: value });

describe('environment parsers', () => {
  it('treat an unset or blank variable as unset, and trim values', () => {
    expect(envString(env(undefined), V)).toBeUndefined();
    expect(envString(env('  '), V)).toBeUndefined();
    expect(envString(env(' x '), V)).toBe('x');
    expect(envInt(env(''), V, 7)).toBe(7);
    expect(envBool(env(undefined), V, true)).toBe(true);
    expect(envList(env(' a, ,b '), V, [])).toEqual(['a', 'b']);
  });

  it('read the values they accept', () => {
    expect(envInt(env('42'), V, 0, 0, 100)).toBe(42);
    expect(envBool(env('off'), V, true)).toBe(false);
    expect(envUrl(env('https://x.example/p'), V, ['https:'])).toBe('https://x.example/p');
    expect(envRatio(env('0.25'), V, 1)).toBe(0.25);
    expect(envDecimal(env('1.5'), V, 1, 0.01, 100)).toBe(1.5);
    expect(envOneOf(env('b'), V, ['a', 'b'] as const, 'a')).toBe('b');
    expect(envKeyValuePairs(env('Api-Key=a%20b,x=1'), V)).toEqual({ 'api-key': 'a b', x: '1' });
    expect(envPatternList(env('AF,*'), V, [], /^[A-Z]+$/, 'code')).toEqual(['AF', '*']);
  });

  it.each([
    [() => envInt(env('1.5'), V, 0), 'must be an integer, got "1.5"'],
    [() => envInt(env('101'), V, 0, 0, 100), 'must be between 0 and 100, got 101'],
    [() => envBool(env('maybe'), V, false), 'must be true or false, got "maybe"'],
    [() => envUrl(env('not a url'), V, ['https:']), 'must be a URL'],
    [() => envUrl(env('ftp://x'), V, ['https:', 'http:']), 'must use https: or http:, got ftp:'],
    [() => envRatio(env('1.5'), V, 1), 'must be a number between 0 and 1, got "1.5"'],
    [() => envDecimal(env('0'), V, 1, 0.01, 100), 'must be a number between 0.01 and 100, got "0"'],
    [() => envOneOf(env('c'), V, ['a', 'b'] as const, 'a'), 'must be one of a, b, got "c"'],
    [() => envKeyValuePairs(env('novalue'), V), 'must be a comma-separated list of key=value pairs'],
    [() => envKeyValuePairs(env('k=%E0%A4%A'), V), 'has a value that is not URL-encoded'],
    [() => envPatternList(env('af'), V, [], /^[A-Z]+$/, 'residency code'), 'has an invalid residency code "af"'],
  ])('refuse a bad value with a ConfigError naming the variable (%#)', (parse, problem) => {
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(`Invalid configuration: ${V} ${problem}`);
  });
});

import type { AppError } from '../../../platform/errors/errors.js';

/** The AppError a call throws, or undefined when it does not throw. */
export function errorOf(fn: () => unknown): AppError | undefined {
  try {
    fn();
  } catch (error) {
    return error as AppError;
  }
  return undefined;
}

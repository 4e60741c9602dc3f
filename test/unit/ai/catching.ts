/** The error of type `type` that `run` throws; fails the test when it throws nothing or something else. */
export function caught<E extends Error>(type: abstract new (...args: never[]) => E, run: () => unknown): E {
  try {
    run();
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error(`expected a ${type.name}`);
}

/** The error of type `type` that `promise` rejects with. */
export async function rejected<E extends Error>(
  type: abstract new (...args: never[]) => E,
  promise: Promise<unknown>,
): Promise<E> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error(`expected a ${type.name}`);
}

/**
 * The assertions the tests use (JSR's @std/assert is unreachable here, so this is a small
 * local equivalent built on node:assert).
 * @module
 */
import nodeAssert from "node:assert/strict";

/** Fails unless `value` is truthy. */
export function assert(value: unknown, message?: string): asserts value {
  nodeAssert.ok(value, message);
}

/** Deep strict equality. */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  nodeAssert.deepStrictEqual(actual, expected, message);
}

/** Deep strict inequality. */
export function assertNotEquals<T>(actual: T, expected: T, message?: string): void {
  nodeAssert.notDeepStrictEqual(actual, expected, message);
}

/** Fails unless `text` matches `pattern`. */
export function assertMatch(text: string, pattern: RegExp, message?: string): void {
  nodeAssert.match(text, pattern, message);
}

/** Fails if `text` contains `part`. */
export function assertNotIncludes(text: string, part: string, message?: string): void {
  nodeAssert.ok(!text.includes(part), message ?? `unexpectedly found ${JSON.stringify(part)}`);
}

/** Awaits `fn` and returns its rejection, which must be an instance of `type`. */
export async function assertRejects<E extends Error>(
  fn: () => Promise<unknown>,
  type: new (...args: never[]) => E,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    nodeAssert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    return error as E;
  }
  throw new nodeAssert.AssertionError({ message: `expected a ${type.name} rejection` });
}

/** Calls `fn` and returns what it throws, which must be an instance of `type`. */
export function assertThrows<E extends Error>(
  fn: () => unknown,
  type: new (...args: never[]) => E,
): E {
  try {
    fn();
  } catch (error) {
    nodeAssert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    return error as E;
  }
  throw new nodeAssert.AssertionError({ message: `expected a ${type.name} to be thrown` });
}

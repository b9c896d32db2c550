/**
 * Match patterns: how config names a sender or a chat, e.g. `http:bob` or `telegram:*`.
 * @module
 */

/** Channels a pattern may name. */
export const CHANNEL_NAMES = ["terminal", "http", "cron", "signal", "telegram"] as const;

/** A channel a message can arrive on. */
export type ChannelName = (typeof CHANNEL_NAMES)[number];

const PATTERN = /^([a-z]+):(\S+)$/;

/** Returns why `pattern` is malformed, or null when it is a valid `channel:identifier`. */
export function matchPatternProblem(pattern: string): string | null {
  const match = PATTERN.exec(pattern);
  if (!match) return `must look like "channel:identifier" (e.g. "http:bob"), got "${pattern}"`;
  if (!(CHANNEL_NAMES as readonly string[]).includes(match[1])) {
    return `unknown channel "${match[1]}" in "${pattern}"; expected one of ${
      CHANNEL_NAMES.join(", ")
    }`;
  }
  const id = match[2];
  // `*` is only a whole identifier; partial globs make it too easy to match a stranger.
  if (id.includes("*") && id !== "*") {
    return `"*" must be the whole identifier (e.g. "${match[1]}:*"), got "${pattern}"`;
  }
  return null;
}

/** Returns true when `pattern` is a wildcard (`channel:*`). */
export function isWildcardPattern(pattern: string): boolean {
  return pattern.endsWith(":*");
}

/** Returns true when `pattern` matches the address `channel:identifier`. */
export function patternMatches(pattern: string, channel: string, identifier: string): boolean {
  if (pattern === `${channel}:${identifier}`) return true;
  return pattern === `${channel}:*`;
}

/**
 * The schema of `[channels.telegram]` and `[channels.signal]` (docs/channels.md).
 * @module
 */
import { z } from "zod";

/** The public Bot API: `api_base_url`'s default. */
export const TELEGRAM_API_DEFAULT = "https://api.telegram.org";

/** signal-cli's `daemon --http` default address: `rpc_url`'s default. */
export const SIGNAL_RPC_DEFAULT = "http://127.0.0.1:8080";

const envName = z.string().regex(
  /^[A-Za-z_][A-Za-z0-9_]*$/,
  "must be an environment variable name like MY_VAR",
);

const httpUrl = (example: string) =>
  z.string().refine(
    (v) => /^https?:\/\/[^\s]+$/.test(v) && URL.canParse(v) && !new URL(v).search,
    `must be an http:// or https:// URL without a query, e.g. "${example}"`,
  ).transform((v) => v.replace(/\/+$/, ""));

/**
 * `[channels.telegram]`: `bot_token_env` names the variable holding the bot token; `token_env`
 * is its older spelling, still accepted (`coop check` warns).
 */
export const telegramChannelSchema = z.strictObject({
  enabled: z.boolean().default(false),
  bot_token_env: envName.optional(),
  token_env: envName.optional(),
  api_base_url: httpUrl(TELEGRAM_API_DEFAULT).default(TELEGRAM_API_DEFAULT),
}).superRefine((t, ctx) => {
  if (t.bot_token_env === undefined && t.token_env === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["bot_token_env"],
      message:
        'is required: the environment variable holding the bot token, e.g. "TELEGRAM_BOT_TOKEN"',
    });
  } else if (
    t.bot_token_env !== undefined && t.token_env !== undefined && t.bot_token_env !== t.token_env
  ) {
    ctx.addIssue({
      code: "custom",
      path: ["token_env"],
      message: "contradicts bot_token_env (token_env is its older spelling); remove token_env",
    });
  }
});

/** `[channels.signal]`: the account signal-cli serves and where its daemon listens. */
export const signalChannelSchema = z.strictObject({
  enabled: z.boolean().default(false),
  account: z.string().regex(
    /^\+[1-9][0-9]{4,17}$/,
    'must be the account\'s number in international format, e.g. "+15551234567"',
  ),
  rpc_url: httpUrl(SIGNAL_RPC_DEFAULT).default(SIGNAL_RPC_DEFAULT),
});

/** The environment variable holding the Telegram bot token, whichever spelling set it. */
export function telegramTokenEnv(telegram: { bot_token_env?: string; token_env?: string }): string {
  return telegram.bot_token_env ?? telegram.token_env ?? "";
}

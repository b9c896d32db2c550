/**
 * What a Telegram update says, as the gateway's `IncomingMessage`: the sender's user id and
 * name, the group (`telegram:<chat id>`, negative) and whether a group message addresses the bot
 * (mentions its @username, replies to one of its messages, or is a `/command`).
 * @module
 */
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { IncomingMessage } from "../../gateway/turn_handler.ts";

/** The channel name in match patterns: `telegram:<user id>`, `telegram:<chat id>`. */
export const TELEGRAM = "telegram";

/** A message update the channel answers: a text (or captioned) message from a person. */
export interface TelegramText {
  /** The message itself. */
  message: Message;
  /** Its text or caption. */
  text: string;
  /** The gateway's view of it (no signal or event hook yet). */
  incoming: IncomingMessage;
}

/** The chat an update belongs to (its queue), or `"none"` for updates without one. */
export function updateChat(update: Update): string {
  return String(update.message?.chat.id ?? "none");
}

/** Reads a text message of a private chat, group or supergroup; null for anything else. */
export function readTelegramText(update: Update, bot: UserFromGetMe): TelegramText | null {
  const message = update.message;
  const from = message?.from;
  if (!message || !from || from.is_bot) return null;
  const text = message.text ?? message.caption;
  if (text === undefined || text.trim() === "") return null;
  const { chat } = message;
  if (chat.type !== "private" && chat.type !== "group" && chat.type !== "supergroup") return null;
  const name = [from.first_name, from.last_name].filter(Boolean).join(" ") || from.username;
  const inGroup = chat.type !== "private";
  return {
    message,
    text,
    incoming: {
      channel: TELEGRAM,
      sender: String(from.id),
      text,
      session: `tg${chat.id}`,
      ...(name ? { senderName: name } : {}),
      ...(inGroup ? { group: String(chat.id), addressed: addressesBot(message, bot) } : {}),
    },
  };
}

/** A mention of the bot's @username, a reply to the bot, or a `/command` (for this bot). */
export function addressesBot(message: Message, bot: UserFromGetMe): boolean {
  if (message.reply_to_message?.from?.id === bot.id) return true;
  const text = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const username = `@${bot.username}`.toLowerCase();
  return entities.some((entity) => {
    const part = text.slice(entity.offset, entity.offset + entity.length).toLowerCase();
    switch (entity.type) {
      case "mention":
        return part === username;
      case "text_mention":
        return entity.user.id === bot.id;
      case "bot_command":
        // `/help@other_bot` is for another bot in the same group.
        return !part.includes("@") || part.endsWith(username);
      default:
        return false;
    }
  });
}

/**
 * Kept-alive provider connections, one pool per dialer and (host, port, TLS): a connection
 * comes back only after its response was read to its clean end, waits at most
 * `IDLE_CONNECTION_MS`, never holds the process open, and leaves the pool as soon as the
 * server closes it or sends anything while it is idle.
 * @module
 */
import type net from "node:net";
import { clearTimeout, setTimeout } from "node:timers";

/**
 * How long a finished connection waits for the next request before Coop closes it: long enough
 * for the model calls of a turn between quick tools, shorter than the 5 s after which common
 * servers (uvicorn, llama.cpp, Node) close idle connections themselves, and far shorter than
 * the minutes after which a NAT forgets one — so a pooled connection is never silently dead.
 */
export const IDLE_CONNECTION_MS = 4000;

/** An idle connection and what watches it while it waits. */
interface Idle {
  socket: net.Socket;
  timer: ReturnType<typeof setTimeout>;
  /** Drops the connection from the pool and closes it. */
  drop: () => void;
}

const noop = () => {};

/** Idle connections of one dialer, by `host|port|tls`; the newest last. */
const pools = new WeakMap<object, Map<string, Idle[]>>();

/** The pool key of a target. */
export function poolKey(host: string, port: number, tls: boolean): string {
  return `${host}|${port}|${tls ? "s" : ""}`;
}

/** Takes the newest idle connection of `owner`'s pool `key` that is still open, if any. */
export function takeIdle(owner: object, key: string): net.Socket | undefined {
  const list = pools.get(owner)?.get(key);
  while (list && list.length > 0) {
    const idle = list.pop()!;
    unwatch(idle);
    const { socket } = idle;
    if (!socket.destroyed && socket.readyState === "open") {
      socket.ref();
      return socket;
    }
    socket.on("error", noop);
    socket.destroy();
  }
  return undefined;
}

/** Puts `socket` (its response read to a clean end, no listeners of the request left) back. */
export function release(owner: object, key: string, socket: net.Socket): void {
  let byKey = pools.get(owner);
  if (!byKey) pools.set(owner, byKey = new Map());
  let list = byKey.get(key);
  if (!list) byKey.set(key, list = []);
  const idle: Idle = {
    socket,
    timer: setTimeout(() => idle.drop(), IDLE_CONNECTION_MS),
    drop: () => {
      unwatch(idle);
      const at = list.indexOf(idle);
      if (at >= 0) list.splice(at, 1);
      // A late error of the closed socket must find a listener (or it would be thrown).
      socket.on("error", noop);
      socket.destroy();
    },
  };
  // Neither the wait nor the connection keeps the process alive.
  idle.timer.unref();
  socket.unref();
  // The server closing it (FIN, reset) or sending what nobody asked for: it cannot be reused.
  socket.on("data", idle.drop);
  socket.on("end", idle.drop);
  socket.on("close", idle.drop);
  socket.on("error", idle.drop);
  list.push(idle);
}

/** Stops watching an idle connection (it is taken, or dropped). */
function unwatch(idle: Idle): void {
  clearTimeout(idle.timer);
  idle.socket.off("data", idle.drop);
  idle.socket.off("end", idle.drop);
  idle.socket.off("close", idle.drop);
  idle.socket.off("error", idle.drop);
}

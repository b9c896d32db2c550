/**
 * `listenRelay()`: the policy proxy's connections, accepted and moved by the trampoline
 * (ffi/relay.c) so that a download's bytes never pass through JavaScript. The C side reads each
 * request head and waits; TypeScript decides and answers once per connection: `reply()` (a
 * refusal) or `dial()` to an address it already checked, after which C splices both ways.
 *
 * C reports on a pipe read here with node:net (epoll, no thread) as 12-byte events
 * `{u32 id, u32 kind, i32 value}`; every FFI call returns at once.
 *
 * Each open connection costs a thread and a few fds in this process, so C caps them: past
 * `maxConnections`, it sends the `refusal` bytes and closes at once, without a thread.
 * @module
 */
import { Buffer } from "node:buffer";
import net from "node:net";
import { ERRNO, errnoName } from "../errno.ts";
import { loadTrampoline, type Trampoline } from "../ffi.ts";
import { MAX_HEAD_BYTES } from "./http_head.ts";

/** Event kinds (`EV_*` in ffi/relay.c). */
const EV = { head: 1, dialed: 2, done: 3, acceptorExit: 4, refused: 5 } as const;
const EVENT_BYTES = 12;
/** What a dial answers when the proxy stopped first. */
const ECANCELED = ERRNO.ECANCELED;
/** Room for the longest head C accepts (HEAD_BUF in ffi/relay.c). */
const HEAD_ROOM = MAX_HEAD_BYTES + 16 * 1024;

/** One accepted connection, waiting for its answer. */
export interface RelayConnection {
  /** The request head, up to and including its blank line. */
  readonly head: Uint8Array;
  /** Sends `bytes` to the client and closes the connection. */
  reply(bytes: Uint8Array): void;
  /**
   * Connects to the numeric `address`:`port`. Resolves to 0 once connected — C then sends
   * `toClient` to the client, `toUpstream` and whatever followed the head upstream, and relays
   * both ways — or to a positive errno; the connection then still waits for `reply()`.
   */
  dial(
    address: string,
    port: number,
    toClient: Uint8Array,
    toUpstream: Uint8Array,
  ): Promise<number>;
}

/** How a relay listens. */
export interface RelayOptions {
  /** Gets each connection once its head is read. */
  onConnection: (connection: RelayConnection) => void;
  /** Most connections open at once (each holds a thread until it ends). */
  maxConnections: number;
  /** Sent to each connection refused past the cap, which is then closed. */
  refusal: Uint8Array;
  /** Called after each refusal with the total so far. */
  onRefused?: (total: number) => void;
}

/** A listening relay. */
export interface RelayListener {
  /** Connections refused so far because `maxConnections` were open. */
  readonly refusedConnections: number;
  /**
   * For when the clients are gone (the sandbox ended): accepts what is left in the backlog and
   * stops accepting; resolves once every connection accepted has had its head given to
   * `onConnection` or has ended. Dials fail as canceled from then on; open relays go on.
   */
  drain(): Promise<void>;
  /** Stops accepting, ends every connection and waits until its threads are gone. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();
const cString = (text: string) => encoder.encode(`${text}\0`);

/** Listens on unix socket `path`; `options.onConnection` gets each connection with its head. */
export async function listenRelay(path: string, options: RelayOptions): Promise<RelayListener> {
  const { onConnection, maxConnections, refusal } = options;
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    throw new RangeError(`maxConnections must be a whole number ≥ 1, got ${maxConnections}`);
  }
  const lib: Trampoline = await loadTrampoline();
  const out = new Int32Array(2);
  const relay = lib.coop_relay_start(
    cString(path),
    maxConnections,
    refusal,
    BigInt(refusal.length),
    out,
  );
  if (relay === null) {
    throw new Error(`cannot listen on ${path}: ${errnoName(out[1])}`);
  }
  const events = new net.Socket({ fd: out[0], readable: true, writable: false });
  const dials = new Map<number, (result: number) => void>();
  const live = new Set<number>();
  let acceptorGone = false;
  // Each accepted connection reports once, with its head or with its end (no head); the
  // acceptor's exit says how many it accepted.
  let accepted = 0, reported = 0;
  let draining = false;
  let refused = 0;
  // Set by close(): from then on no call may reach the relay, which close() frees once C has
  // ended every connection — a decision still pending (a slow resolver) must find it gone.
  let stopped = false;
  let finished: () => void = () => {};
  const allGone = new Promise<void>((resolve) => (finished = resolve));
  let drained: () => void = () => {};
  const allReported = new Promise<void>((resolve) => (drained = resolve));
  const checkFinished = () => {
    if (!acceptorGone || reported < accepted) return;
    drained();
    if (live.size === 0) finished();
  };

  const connection = (id: number): RelayConnection => {
    const buffer = new Uint8Array(HEAD_ROOM);
    const n = Number(lib.coop_relay_head(relay, id, buffer, BigInt(buffer.length)));
    return {
      head: buffer.slice(0, Math.max(0, n)),
      reply(bytes) {
        if (stopped || !live.has(id)) return;
        lib.coop_relay_reply(relay, id, bytes, BigInt(bytes.length));
      },
      dial(address, port, toClient, toUpstream) {
        return new Promise((resolve) => {
          if (stopped || draining || !live.has(id)) return resolve(ECANCELED);
          dials.set(id, resolve);
          const accepted = lib.coop_relay_dial(
            relay,
            id,
            cString(address),
            port,
            toClient,
            BigInt(toClient.length),
            toUpstream,
            BigInt(toUpstream.length),
          );
          if (accepted < 0) {
            dials.delete(id);
            resolve(-accepted);
          }
        });
      },
    };
  };

  const dispatch = (id: number, kind: number, value: number) => {
    if (kind === EV.acceptorExit) {
      acceptorGone = true;
      accepted = value;
    } else if (kind === EV.refused) {
      refused = value;
      options.onRefused?.(refused);
    } else if (kind === EV.head) {
      reported++;
      live.add(id);
      // After close(), C ends the connection on its own; nobody is there to answer it.
      if (!stopped) onConnection(connection(id));
    } else if (kind === EV.dialed) {
      dials.get(id)?.(-value);
      dials.delete(id);
    } else if (kind === EV.done) {
      if (!live.has(id)) reported++; // ended before its head
      // A dial still pending when the proxy stops ends as canceled.
      dials.get(id)?.(ECANCELED);
      dials.delete(id);
      live.delete(id);
      lib.coop_relay_release(relay, id);
    }
    checkFinished();
  };

  let pending = new Uint8Array(0);
  events.on("data", (chunk: Buffer) => {
    const bytes = Buffer.concat([pending, chunk]);
    // A Buffer may be a window into a shared pool: read it through its own offset.
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let offset = 0;
    for (; offset + EVENT_BYTES <= bytes.length; offset += EVENT_BYTES) {
      dispatch(
        view.getUint32(offset, true),
        view.getUint32(offset + 4, true),
        view.getInt32(offset + 8, true),
      );
    }
    pending = bytes.slice(offset);
  });
  events.on("error", () => {});

  let closing: Promise<void> | undefined;
  return {
    get refusedConnections() {
      return refused;
    },
    drain() {
      if (!draining && !stopped) {
        draining = true;
        lib.coop_relay_drain(relay);
      }
      return allReported;
    },
    close() {
      closing ??= (async () => {
        stopped = true;
        lib.coop_relay_stop(relay);
        await allGone;
        lib.coop_relay_free(relay);
        events.destroy();
      })();
      return closing;
    },
  };
}

/**
 * signal-cli's JSON-RPC over HTTP (`signal-cli -a ACCOUNT daemon --http HOST:PORT`, documented
 * in signal-cli-jsonrpc(5)): `POST {rpc_url}/api/v1/rpc` with a JSON-RPC 2.0 request; the answer
 * holds `result` or an `error` object (`code`, `message`). Failures become
 * `ChannelDeliveryError`s: the daemon unreachable or answering 5xx is worth retrying, an error
 * object (bad params, unknown recipient …) is not, except an internal error (-32603).
 * @module
 */
import { errorMessage } from "../../errors/coop_error.ts";
import { ChannelDeliveryError } from "../delivery_retry.ts";

/** JSON-RPC 2.0's "internal error": the daemon failed on its side. */
const INTERNAL_ERROR = -32603;

/** A JSON-RPC client of one signal-cli daemon. */
export class SignalRpc {
  readonly #url: string;
  #nextId = 1;

  /** `rpcUrl` is the daemon's base URL, e.g. `http://127.0.0.1:8080`. */
  constructor(rpcUrl: string) {
    this.#url = `${rpcUrl}/api/v1/rpc`;
  }

  /** Calls `method` with `params`; resolves with its `result`. */
  async call(
    method: string,
    params: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const id = this.#nextId++;
    let response: Response;
    try {
      response = await fetch(this.#url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", method, params, id }),
        signal,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new ChannelDeliveryError(
        "signal.unreachable",
        `signal-cli ${method}: ${errorMessage(error)}`,
        { retryable: true },
      );
    }
    const text = await response.text();
    let body: { result?: unknown; error?: { code?: number; message?: string } } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (body?.error) {
      const code = body.error.code ?? 0;
      throw new ChannelDeliveryError(
        "signal.rpc_error",
        `signal-cli ${method}: error ${code}: ${body.error.message ?? "(no message)"}`,
        { retryable: code === INTERNAL_ERROR },
      );
    }
    if (!response.ok || body === undefined) {
      throw new ChannelDeliveryError(
        "signal.unreachable",
        `signal-cli ${method}: HTTP ${response.status}${body === undefined ? " (not JSON)" : ""}`,
        { retryable: response.status >= 500 || response.status === 429 },
      );
    }
    return body.result;
  }
}

/**
 * A load generator for the benchmarks: an HTTP server on 127.0.0.1 that answers every request with
 * one text answer streamed in a chosen number of deltas, framed as one of the three model APIs'
 * SSE (the same event shapes the live Provider layers decode). Unlike the tests' MockModelServer it
 * knows no faults or fixtures; it paces deltas and timestamps each one, which is what latency and
 * throughput figures need.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export type Wire = "openai-chat" | "anthropic" | "openai-responses"

export interface LoopbackOptions {
  readonly wire: Wire
  /** The answer's deltas, in order. */
  readonly deltas: ReadonlyArray<string>
  /** Pause between two deltas (0: as fast as the socket takes them). */
  readonly paceMs?: number
  /** Called with the delta index and `performance.now()` just before it is written. */
  readonly onDelta?: (index: number, at: number) => void
  /** Called when a request arrives (`performance.now()`). */
  readonly onRequest?: (at: number) => void
}

export interface LoopbackModel {
  /** The base URL a Provider is configured with (`…/v1` for the OpenAI wires). */
  readonly baseUrl: string
  readonly requests: () => number
  readonly close: () => Promise<void>
}

const data = (json: unknown) => `data: ${JSON.stringify(json)}\n\n`
const named = (json: { readonly type: string; readonly [key: string]: unknown }) => `event: ${json.type}\n${data(json)}`

interface Framing {
  readonly head: ReadonlyArray<string>
  readonly delta: (text: string) => string
  readonly tail: ReadonlyArray<string>
}

const framing = (wire: Wire): Framing => {
  switch (wire) {
    case "openai-chat": {
      const chunk = (delta: unknown, finish: string | null = null, extra: object = {}) =>
        data({ id: "bench", object: "chat.completion.chunk", created: 0, model: "bench", choices: finish === "usage" ? [] : [{ index: 0, delta, finish_reason: finish }], ...extra })
      return {
        head: [chunk({ role: "assistant", content: "" })],
        delta: (content) => chunk({ content }),
        tail: [chunk({}, "stop"), chunk({}, "usage", { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }), "data: [DONE]\n\n"]
      }
    }
    case "anthropic":
      return {
        head: [
          named({ type: "message_start", message: { id: "bench", type: "message", role: "assistant", model: "bench", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }),
          named({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } })
        ],
        delta: (text) => named({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }),
        tail: [
          named({ type: "content_block_stop", index: 0 }),
          named({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } }),
          named({ type: "message_stop" })
        ]
      }
    case "openai-responses": {
      const item = { id: "msg_bench", type: "message", role: "assistant", status: "in_progress", content: [] }
      const response = (status: string, extra: object = {}) => ({ id: "resp_bench", object: "response", status, model: "bench", output: [], ...extra })
      return {
        head: [named({ type: "response.created", response: response("in_progress") }), named({ type: "response.output_item.added", output_index: 0, item })],
        delta: (delta) => named({ type: "response.output_text.delta", item_id: "msg_bench", output_index: 0, content_index: 0, delta }),
        tail: [
          named({ type: "response.output_item.done", output_index: 0, item: { ...item, status: "completed" } }),
          named({ type: "response.completed", response: response("completed", { usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 } }) })
        ]
      }
    }
  }
}

const write = (response: Http.ServerResponse, text: string) =>
  new Promise<void>((resolve) => (response.write(text) ? resolve() : response.once("drain", () => resolve())))

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const start = async (options: LoopbackOptions): Promise<LoopbackModel> => {
  const frame = framing(options.wire)
  let requests = 0
  const server = Http.createServer((request, response) => {
    requests++
    options.onRequest?.(performance.now())
    request.resume()
    request.on("end", async () => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      for (const line of frame.head) await write(response, line)
      for (const [i, text] of options.deltas.entries()) {
        if ((options.paceMs ?? 0) > 0 && i > 0) await pause(options.paceMs!)
        options.onDelta?.(i, performance.now())
        await write(response, frame.delta(text))
      }
      for (const line of frame.tail) await write(response, line)
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  return {
    baseUrl: options.wire === "anthropic" ? origin : `${origin}/v1`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

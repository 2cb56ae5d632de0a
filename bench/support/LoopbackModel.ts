/**
 * A load generator for the benchmarks: an HTTP server on 127.0.0.1 that answers every request with
 * one text answer streamed in a chosen number of deltas, framed as one of the three model APIs'
 * SSE (the same event shapes the live Provider layers decode). Unlike the tests' MockModelServer it
 * knows no faults or fixtures; it paces deltas and timestamps each one, which is what latency and
 * throughput figures need. `LoopbackMain.ts` runs it as a process of its own.
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
  /**
   * Each delta's text becomes `[t=<epoch ms>]`, the wall-clock time just before it was written, so
   * a reader in another process can tell how long the delta took to reach it (`stampsOf`).
   */
  readonly stamp?: boolean
  /**
   * openai-chat only: a request whose messages hold no tool result is answered with this one tool
   * call instead of the text; the request carrying its result gets the text (a two-request task).
   */
  readonly toolCall?: { readonly name: string; readonly arguments: string }
  /** With `toolCall`: how many requests in a row get the call (default 1); each has its own call id. */
  readonly toolRounds?: number
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

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export const epochMs = (): number => performance.timeOrigin + performance.now()

const STAMP = /\[t=(\d+(?:\.\d+)?)\]/g

/** The write times a stamped answer's text carries. */
export const stampsOf = (text: string): ReadonlyArray<number> => Array.from(text.matchAll(STAMP), (m) => Number(m[1]))

const data = (json: unknown) => `data: ${JSON.stringify(json)}\n\n`
const named = (json: { readonly type: string; readonly [key: string]: unknown }) => `event: ${json.type}\n${data(json)}`

interface Framing {
  readonly head: ReadonlyArray<string>
  readonly delta: (text: string) => string
  readonly tail: ReadonlyArray<string>
}

const chatChunk = (delta: unknown, finish: string | null = null, extra: object = {}) =>
  data({ id: "bench", object: "chat.completion.chunk", created: 0, model: "bench", choices: finish === "usage" ? [] : [{ index: 0, delta, finish_reason: finish }], ...extra })

const chatUsage = chatChunk({}, "usage", { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })

const framing = (wire: Wire): Framing => {
  switch (wire) {
    case "openai-chat":
      return {
        head: [chatChunk({ role: "assistant", content: "" })],
        delta: (content) => chatChunk({ content }),
        tail: [chatChunk({}, "stop"), chatUsage, "data: [DONE]\n\n"]
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

const toolCallAnswer = (call: { readonly name: string; readonly arguments: string }, round: number): ReadonlyArray<string> => [
  chatChunk({
    role: "assistant",
    content: null,
    tool_calls: [{ index: 0, id: round === 0 ? "call_bench" : `call_bench_${round}`, type: "function", function: { name: call.name, arguments: "" } }]
  }),
  chatChunk({ tool_calls: [{ index: 0, function: { arguments: call.arguments } }] }),
  chatChunk({}, "tool_calls"),
  chatUsage,
  "data: [DONE]\n\n"
]

const toolResults = (body: string): number => {
  try {
    const parsed = JSON.parse(body) as { readonly messages?: ReadonlyArray<{ readonly role?: string }> }
    return (parsed.messages ?? []).filter((m) => m.role === "tool").length
  } catch {
    return 0
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
    const body: Array<Buffer> = []
    request.on("data", (piece: Buffer) => body.push(piece))
    request.on("end", async () => {
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      // A client that went away (a benchmark that finished) ends this answer; nothing to report.
      response.on("error", () => {})
      const answered = options.toolCall === undefined ? 0 : toolResults(Buffer.concat(body).toString("utf8"))
      if (options.toolCall !== undefined && answered < (options.toolRounds ?? 1)) {
        for (const line of toolCallAnswer(options.toolCall, answered)) await write(response, line)
        return response.end()
      }
      for (const line of frame.head) await write(response, line)
      for (const [i, text] of options.deltas.entries()) {
        if ((options.paceMs ?? 0) > 0 && i > 0) await pause(options.paceMs!)
        if (response.destroyed) return
        options.onDelta?.(i, performance.now())
        await write(response, frame.delta(options.stamp === true ? `[t=${epochMs().toFixed(3)}]` : text))
      }
      for (const line of frame.tail) await write(response, line)
      response.end()
    })
  })
  // Many conversations at once: do not let the listen backlog refuse connections.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, resolve))
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

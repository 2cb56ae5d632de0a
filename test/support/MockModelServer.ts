/**
 * MockModelServer: a real HTTP model server on 127.0.0.1 (port 0) for tests, closed with its Scope.
 *
 * It speaks Chat Completions (`POST /v1/chat/completions`), Anthropic Messages (`POST /v1/messages`)
 * and Responses (`POST /v1/responses`). Every request, on any path, takes the next scripted Reply
 * (one FIFO queue: "call 1, call 2, call 3"); a Scenario reply is rendered in the wire format of the
 * path it was asked on. Every request is recorded (method, path, headers, raw body, parsed JSON).
 *
 *   const server = yield* MockModelServer.make()
 *   yield* server.enqueue(
 *     Reply.toolCalls([{ id: "c1", name: "Read", args: { path: "a.txt" } }, { id: "c2", name: "LS", args: {} }]),
 *     Reply.status(503, { headers: { "retry-after": "1" } }),
 *     Reply.text("done")
 *   )
 *   // point a client at it: server.baseUrl("openai-chat") → http://127.0.0.1:PORT/v1
 *   //                       server.baseUrl("anthropic")   → http://127.0.0.1:PORT
 *   const requests = yield* server.awaitRequests(3)   // waits on the real condition, no sleeps
 *
 * A CLI under test (a child process) finds it through its environment:
 *   spawn("node", ["dist/main.js", "run", "hi"], { env: { ...process.env, ...server.childEnv("anthropic") } })
 * `awaitClosed(n)` resolves when the client has dropped request n's connection (e.g. after an interrupt).
 *
 * Replies (all in `Reply`):
 *   text(text, opts?) · toolCalls(calls, opts?) · scenario({ text, reasoning, toolCalls, finish, usage })
 *   sse(events)                         raw SSE event strings, sent one write each
 *   fixture("sse/anthropic/text-basic.sse")      a raw file under test/fixtures, split at blank lines
 *   errorFixture("errors/openai/429-rate-limit-exceeded")   body + status/headers from its .meta.json
 *   status(code, { headers?, body? })  any status, headers and body (body defaults to an error JSON)
 * Faults (second argument of any reply, or `Reply.withFaults(reply, faults)`):
 *   delayMs      wait before sending anything (headers included)
 *   hang         never answer (until the client gives up or the scope closes)
 *   stallAfter   send N SSE events, then keep the connection open and silent
 *   cutAfter     send N SSE events, then destroy the socket (connection reset mid-stream)
 *   truncateAt   send only the first N bytes of the body, then end the response cleanly
 *   eventDelayMs wait this long before each SSE event after the first (a model that streams slowly)
 * `make({ respond })` answers from the request itself once the queue is empty (a model that reads its
 * context: the soak's). Each recorded request carries `receivedAt` (wall-clock ms), so a test can
 * measure the delay a client left between two requests.
 * A request with no reply left is answered 400 with an explanatory error body (never retried).
 */
import { Effect, type Scope } from "effect"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { render, type Scenario, type ScenarioToolCall, type Wire } from "./MockWire.js"

export interface Faults {
  readonly delayMs?: number
  readonly hang?: boolean
  readonly stallAfter?: number
  readonly cutAfter?: number
  readonly truncateAt?: number
  readonly eventDelayMs?: number
  readonly writes?: ReadonlyArray<{ readonly events: number; readonly after?: Promise<void> }>
}

export type Reply =
  | { readonly _tag: "Scenario"; readonly scenario: Scenario; readonly faults: Faults }
  | { readonly _tag: "Sse"; readonly events: ReadonlyArray<string>; readonly faults: Faults }
  | {
    readonly _tag: "Http"
    readonly status: number
    readonly statusText?: string | undefined
    readonly headers: Record<string, string>
    readonly body: string
    readonly faults: Faults
  }

export interface RecordedRequest {
  readonly index: number
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  readonly json: unknown
  /** When its body had arrived (Date.now()). */
  readonly receivedAt: number
  /** When its response was complete or its connection closed, whichever came first (undefined while open). */
  readonly endedAt: () => number | undefined
}

export const FIXTURES = Path.join(import.meta.dirname, "..", "fixtures")

/** The texts of a recorded Chat Completions or Anthropic request's user messages, in order. */
export const userTexts = (request: RecordedRequest): ReadonlyArray<string> => {
  const body = request.json as { readonly messages?: ReadonlyArray<{ readonly role: string; readonly content: unknown }> }
  return (body.messages ?? []).filter((m) => m.role === "user").flatMap((m) =>
    typeof m.content === "string"
      ? [m.content]
      : Array.isArray(m.content)
      ? m.content.flatMap((part: { readonly type?: unknown; readonly text?: unknown }) => (part.type === "text" && typeof part.text === "string" ? [part.text] : []))
      : []
  )
}

/** Splits a raw SSE body into events (each keeps its blank line; a partial tail stays as it is). */
export const splitSse = (body: string): Array<string> => body.match(/[\s\S]*?\n\n|[\s\S]+$/g) ?? []

export const Reply = {
  scenario: (scenario: Scenario, faults: Faults = {}): Reply => ({ _tag: "Scenario", scenario, faults }),
  text: (text: string | ReadonlyArray<string>, options: Omit<Scenario, "text"> = {}, faults: Faults = {}): Reply =>
    Reply.scenario({ ...options, text }, faults),
  toolCalls: (
    toolCalls: ReadonlyArray<ScenarioToolCall>,
    options: Omit<Scenario, "toolCalls"> = {},
    faults: Faults = {}
  ): Reply => Reply.scenario({ ...options, toolCalls }, faults),
  sse: (events: ReadonlyArray<string>, faults: Faults = {}): Reply => ({ _tag: "Sse", events, faults }),
  fixture: (relative: string, faults: Faults = {}): Reply =>
    Reply.sse(splitSse(Fs.readFileSync(Path.join(FIXTURES, relative), "utf8")), faults),
  errorFixture: (relativeWithoutExtension: string, faults: Faults = {}): Reply => {
    const base = Path.join(FIXTURES, relativeWithoutExtension)
    const meta = JSON.parse(Fs.readFileSync(`${base}.meta.json`, "utf8")) as {
      status: number
      statusText?: string
      headers: Record<string, string>
    }
    // the server computes framing itself; a recorded length could disagree with the bytes sent
    const { "content-length": _l, connection: _c, "transfer-encoding": _t, ...headers } = meta.headers
    return { _tag: "Http", status: meta.status, statusText: meta.statusText, headers, body: Fs.readFileSync(`${base}.json`, "utf8"), faults }
  },
  status: (
    status: number,
    options: { readonly headers?: Record<string, string>; readonly body?: string } = {},
    faults: Faults = {}
  ): Reply => ({
    _tag: "Http",
    status,
    headers: { "content-type": "application/json", ...options.headers },
    body: options.body ?? JSON.stringify({ error: { type: "mock_error", message: `mock status ${status}` } }),
    faults
  }),
  withFaults: (reply: Reply, faults: Faults): Reply => ({ ...reply, faults: { ...reply.faults, ...faults } })
}

export interface MockModelServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** The base URL a Provider layer expects for that wire format. */
  readonly baseUrl: (wire: Wire) => string
  readonly enqueue: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Resolves once at least `n` requests have arrived. */
  readonly awaitRequests: (n: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Replies not yet consumed. */
  readonly pending: Effect.Effect<number>
  /** Resolves once the connection of request `index` (1-based) is closed, by either side. */
  readonly awaitClosed: (index: number) => Effect.Effect<void>
  /** BATON_* variables pointing a child process at this server (the key is a dummy). */
  readonly childEnv: (wire: Wire, model?: string) => Record<string, string>
}

const wireOf = (path: string): Wire | undefined =>
  path.endsWith("/chat/completions") ? "openai-chat" : path.endsWith("/messages") ? "anthropic" : path.endsWith("/responses") ? "openai-responses" : undefined

const modelOf = (json: unknown): string =>
  typeof json === "object" && json !== null && "model" in json && typeof json.model === "string" ? json.model : "mock-model"

const parse = (body: string): unknown => {
  try {
    return JSON.parse(body)
  } catch {
    return undefined
  }
}

const writeGroups = async (res: Http.ServerResponse, events: ReadonlyArray<string>, groups: NonNullable<Faults["writes"]>) => {
  let next = 0
  for (const group of groups) {
    if (group.after !== undefined) await group.after
    if (res.destroyed) return
    res.write(events.slice(next, next + group.events).join(""))
    next += group.events
  }
  if (next < events.length) res.write(events.slice(next).join(""))
  res.end()
}

const serve = (reply: Reply, wire: Wire | undefined, model: string, res: Http.ServerResponse, onClose: (f: () => void) => void) => {
  const faults = reply.faults
  const send = () => {
    if (faults.hang === true) return
    if (reply._tag === "Http") {
      res.writeHead(reply.status, reply.statusText ?? "", reply.headers)
      res.end(faults.truncateAt === undefined ? reply.body : Buffer.from(reply.body).subarray(0, faults.truncateAt))
      return
    }
    const events = reply._tag === "Sse"
      ? reply.events
      : render(wire ?? "openai-chat", reply.scenario, model)
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" })
    if (faults.truncateAt !== undefined) {
      res.end(Buffer.from(events.join("")).subarray(0, faults.truncateAt))
      return
    }
    if (faults.writes !== undefined) return void writeGroups(res, events, faults.writes)
    const limit = faults.stallAfter ?? faults.cutAfter ?? events.length
    const finish = () => {
      // The reset comes after the events sent so far have left: a client sees them, then the cut.
      if (faults.cutAfter !== undefined) res.write("\n", () => res.socket?.destroy())
      else if (faults.stallAfter === undefined) res.end()
    }
    const delay = faults.eventDelayMs ?? 0
    if (delay <= 0) {
      for (const event of events.slice(0, limit)) res.write(event)
      return finish()
    }
    let next = 0
    let timer: ReturnType<typeof setTimeout> | undefined
    onClose(() => clearTimeout(timer))
    const pace = () => {
      if (res.destroyed) return
      if (next >= limit) return finish()
      res.write(events[next++])
      timer = setTimeout(pace, delay)
    }
    pace()
  }
  if (faults.delayMs === undefined) return send()
  const timer = setTimeout(send, faults.delayMs)
  onClose(() => clearTimeout(timer))
}

export const make = (options: {
  readonly replies?: ReadonlyArray<Reply>
  /** Answers a request when no scripted reply is left. */
  readonly respond?: (request: RecordedRequest) => Reply
  /** The model its streams say answered, as a provider names a dated snapshot (default: the one asked for). */
  readonly answeredBy?: (requested: string) => string
} = {}): Effect.Effect<MockModelServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue: Array<Reply> = [...(options.replies ?? [])]
    const recorded: Array<RecordedRequest> = []
    const closed = new Set<number>()
    const waiters = new Set<() => void>()
    const wakeAll = () => {
      for (const wake of waiters) wake()
    }
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const json = parse(body)
        let endedAt: number | undefined
        const ended = () => {
          endedAt ??= Date.now()
        }
        res.once("finish", ended)
        res.once("close", ended)
        const request: RecordedRequest = {
          endedAt: () => endedAt,
          index: recorded.length + 1,
          method: req.method ?? "",
          path: req.url ?? "",
          headers: req.headers,
          body,
          json,
          receivedAt: Date.now()
        }
        recorded.push(request)
        res.on("close", () => {
          closed.add(request.index)
          wakeAll()
        })
        wakeAll()
        const reply = queue.shift() ?? options.respond?.(request)
        if (reply === undefined) {
          res.writeHead(400, { "content-type": "application/json" })
          res.end(JSON.stringify({
            error: {
              type: "invalid_request_error",
              message: `MockModelServer: no reply scripted for request #${request.index} ${request.method} ${request.path}`
            }
          }))
          return
        }
        serve(reply, wireOf(request.path), (options.answeredBy ?? ((m) => m))(modelOf(json)), res, (f) => res.on("close", f))
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    const url = `http://127.0.0.1:${port}`
    const when = <A>(ready: () => A | undefined) =>
      Effect.async<A>((resume) => {
        const check = () => {
          const value = ready()
          if (value === undefined) return
          waiters.delete(check)
          resume(Effect.succeed(value))
        }
        waiters.add(check)
        check()
        return Effect.sync(() => waiters.delete(check))
      })
    return {
      url,
      baseUrl: (wire) => (wire === "anthropic" ? url : `${url}/v1`),
      enqueue: (...replies) => Effect.sync(() => void queue.push(...replies)),
      requests: Effect.sync(() => [...recorded]),
      awaitRequests: (n) => when(() => (recorded.length >= n ? [...recorded] : undefined)),
      pending: Effect.sync(() => queue.length),
      awaitClosed: (index) => when(() => (closed.has(index) ? true : undefined)),
      childEnv: (wire, model = "mock-model") => ({
        BATON_PROVIDER: wire,
        BATON_BASE_URL: wire === "anthropic" ? url : `${url}/v1`,
        BATON_MODEL: model,
        BATON_API_KEY: "sk-mock-not-a-real-key"
      })
    }
  })

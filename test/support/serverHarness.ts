import { Context, Effect, Layer, Queue, Ref, type Scope, Stream } from "effect"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import { BatonServer, type ServeOptions, serve } from "../../src/programs/server/Server.js"
import { Backend } from "../../src/services/Backend.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { layerRemote, type RemoteOptions } from "../../src/services/backend/Remote.js"
import { Provider } from "../../src/services/Provider.js"
import type { Store } from "../../src/services/Store.js"

/** A Provider the test feeds: every request streams what `emit` offers, up to a Finish. */
export const gatedProvider = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<ProviderEvent>()
  const calls = yield* Ref.make(0)
  const provider = Provider.of({
    stream: () =>
      Stream.unwrap(Effect.as(Ref.update(calls, (n) => n + 1), Stream.fromQueue(queue).pipe(Stream.takeUntil((e) => e._tag === "Finish"))))
  })
  return {
    layer: Layer.succeed(Provider, provider),
    emit: (...events: ReadonlyArray<ProviderEvent>) => Queue.offerAll(queue, events),
    calls: Ref.get(calls)
  }
})

export const text = (...parts: ReadonlyArray<string>): ReadonlyArray<ProviderEvent> => parts.map((t) => ({ _tag: "TextDelta", text: t }))
export const finish: ReadonlyArray<ProviderEvent> = [
  { _tag: "Usage", inputTokens: 1, outputTokens: 1, cachedInputTokens: 0, totalTokens: 2 },
  { _tag: "Finish", reason: "stop" }
]

/** `baton serve` over a local backend on 127.0.0.1:0 in this scope; returns the bound server. */
export const startServer = (options: ServeOptions = {}): Effect.Effect<BatonServer["Type"], unknown, Scope.Scope | Store | Provider> =>
  Effect.map(Layer.build(serve({ port: 0, drainTimeoutMs: 1_000, ...options }).pipe(Layer.provide(layerLocal()))), (ctx) =>
    Context.get(ctx, BatonServer))

/** A local backend over the Store and Provider in context, in this scope. */
export const localBackend: Effect.Effect<Backend["Type"], unknown, Scope.Scope | Store | Provider> = Effect.map(
  Layer.build(layerLocal()),
  (ctx) => Context.get(ctx, Backend)
)

/** `baton serve` over a given backend, in this scope. */
export const serveOn = (backend: Backend["Type"], options: ServeOptions = {}): Effect.Effect<BatonServer["Type"], unknown, Scope.Scope> =>
  Effect.map(Layer.build(serve({ port: 0, drainTimeoutMs: 1_000, ...options }).pipe(Layer.provide(Layer.succeed(Backend, backend)))), (ctx) =>
    Context.get(ctx, BatonServer))

/** A remote backend in this scope. */
export const remote = (options: RemoteOptions): Effect.Effect<Backend["Type"], never, Scope.Scope> =>
  Effect.map(Layer.build(layerRemote(options)), (ctx) => Context.get(ctx, Backend))

export interface SseEvent {
  readonly id: string | undefined
  readonly data: string
}

/**
 * Fetches `url` and reads its raw SSE until `until` holds for the events so far (or the body ends),
 * then hangs up (an abort closes the connection, as a client going away does).
 */
export const readSse = (
  url: string,
  init: RequestInit = {},
  until: (events: ReadonlyArray<SseEvent>, comments: ReadonlyArray<string>) => boolean = () => false
) =>
  Effect.promise(async () => {
    const controller = new AbortController()
    const response = await fetch(url, { ...init, signal: controller.signal })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const events: Array<SseEvent> = []
    const comments: Array<string> = []
    let buffer = ""
    let raw = ""
    let ended = false
    while (!until(events, comments)) {
      const { done, value } = await reader.read()
      if (done) break
      const text = decoder.decode(value, { stream: true })
      raw += text
      buffer += text
      let end: number
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        if (block.startsWith(":")) {
          comments.push(block)
          continue
        }
        let id: string | undefined
        let event = "message"
        const data: Array<string> = []
        for (const line of block.split("\n")) {
          if (line.startsWith("id: ")) id = line.slice(4)
          else if (line.startsWith("event: ")) event = line.slice(7)
          else if (line.startsWith("data: ")) data.push(line.slice(6))
        }
        // The end marker says the stream is complete; tests read the chunks and check `ended`.
        if (event === "end") ended = true
        else events.push({ id, data: data.join("\n") })
      }
    }
    controller.abort()
    return { status: response.status, headers: response.headers, events, comments, raw, ended }
  })

export const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body)
})

export const fetchJson = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) as unknown }
  })

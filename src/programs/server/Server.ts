import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Data, Deferred, Effect, Exit, FiberId, FiberMap, Layer, Option, Redacted, Ref, Stream } from "effect"
import * as Http from "node:http"
import type { ConversationSettingsInput } from "../../domain/Conversation.js"
import type { Chunk } from "../../domain/Events.js"
import { noParentSpan } from "../../domain/Telemetry.js"
import { Backend } from "../../services/Backend.js"
import { BatonApi } from "../../services/backend/HttpApi.js"
import { DEFAULT_MAX_BODY_BYTES, gateLayer, isLoopbackHost } from "./Auth.js"
import type { Pricing } from "../../domain/Usage.js"
import { handlersLayer } from "./Handlers.js"
import type { StreamEnd } from "./Sse.js"
import { realClock } from "../../services/RealClock.js"

/**
 * `baton serve`: HTTP + SSE over the Backend. programs/server holds the server side of the remote
 * protocol (services/backend/HttpApi.ts defines it, services/backend/Remote.ts is its client): this
 * module binds the listener, drains runs at shutdown and exports the embedding API (`baton/Server`);
 * Handlers.ts maps each endpoint to one Backend call, Sse.ts streams a run's chunks as resumable
 * events, Auth.ts gates every route (the bearer token; nothing while draining) and tells a loopback
 * host from one that needs a token.
 */

export const DEFAULT_HOST = "127.0.0.1"
export const DEFAULT_PORT = 8283

export interface ServeOptions {
  /** Default 127.0.0.1. Any non-loopback address requires a token. */
  readonly host?: string
  /** Default 8283; 0 picks a free port (read it from BatonServer). */
  readonly port?: number
  /** Enables bearer auth on every endpoint except /healthz (`--token` / `BATON_TOKEN`). */
  readonly token?: Redacted.Redacted<string> | undefined
  /** SSE heartbeat period; default 15 s. */
  readonly heartbeatMs?: number
  /** How long shutdown waits for active runs to reach a stop reason; default 10 s. */
  readonly drainTimeoutMs?: number
  /** The largest request body accepted (413 above it); default 8 MiB. */
  readonly maxBodyBytes?: number
  /** What `POST /v1/conversations` without settings creates (default: the schema's defaults). */
  readonly conversationDefaults?: ConversationSettingsInput
  /** Settings `pricing`, for the cost in `GET /v1/usage`. */
  readonly pricing?: Pricing
  /**
   * A cluster runner (`serve --cluster`): /healthz shows its address and shards, and shutdown does not
   * wait for active runs — their conversations move to another runner, where they go on.
   */
  readonly runner?: Effect.Effect<{ readonly address: string; readonly shards: ReadonlyArray<number> }>
}

/** Why `baton serve` could not start; `message` is meant for the user as it is. */
export class ServerStartError extends Data.TaggedError("ServerStartError")<{
  readonly reason: "insecure_bind" | "empty_token" | "listen"
  readonly message: string
}> {}

/** The running server's bound address. */
export class BatonServer extends Context.Tag("baton/Server")<BatonServer, {
  readonly host: string
  readonly port: number
  /** Base URL for `layerRemote`, e.g. `http://127.0.0.1:8283`. */
  readonly url: string
}>() {}

const withinMs = <A, E, R>(ms: number, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.interruptible, Effect.timeoutOption(ms), Effect.withClock(realClock))

const urlOf = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}`

/** How many of something are open, and a wait for none: a counter, not a fiber per thing. */
const openCount = () => {
  let open = 0
  let waiter: Deferred.Deferred<void> | undefined
  return {
    add: () => void open++,
    count: () => open,
    remove: () => {
      if (--open === 0 && waiter !== undefined) Deferred.unsafeDone(waiter, Exit.void)
    },
    none: Effect.suspend(() => {
      waiter = Deferred.unsafeMake<void>(FiberId.none)
      if (open === 0) Deferred.unsafeDone(waiter, Exit.void)
      return Deferred.await(waiter)
    })
  }
}

/**
 * Responses not finished yet (a stream counts until its last byte). Shutdown closes the sockets once
 * there are none: whatever is left then is idle, or a spare connection that never carried a request.
 */
const openResponses = (server: Http.Server) => {
  const responses = openCount()
  server.on("request", (_request, response) => {
    responses.add()
    response.once("close", responses.remove)
  })
  return { done: responses.none }
}

const make = Effect.fn("Server.make")(function*(options: ServeOptions) {
  const host = options.host ?? DEFAULT_HOST
  const port = options.port ?? DEFAULT_PORT
  const token = options.token
  if (token !== undefined && Redacted.value(token).length === 0) {
    return yield* new ServerStartError({ reason: "empty_token", message: "the bearer token must not be empty" })
  }
  if (token === undefined && !isLoopbackHost(host)) {
    return yield* new ServerStartError({
      reason: "insecure_bind",
      message: `refusing to listen on ${host} without a token: anyone who can reach it could run models and read conversations. ` +
        "Set --token or BATON_TOKEN, or bind 127.0.0.1."
    })
  }
  const backend = yield* Backend
  const scope = yield* Effect.scope
  const runner = options.runner
  const drainTimeoutMs = runner !== undefined ? 0 : options.drainTimeoutMs ?? 10_000
  const draining = yield* Ref.make(false)
  const closing = yield* Deferred.make<void>()
  // Every run started here until it reaches its stop reason: what shutdown waits for. While a client
  // reads a run's stream to the end, that stream is the run's tracker (counted: a send pays for no
  // fiber of its own here); one that stops early hands over to a follower of the server's own, which
  // drains the run from where the client left it.
  const reading = openCount()
  const followers = yield* FiberMap.make<string, void, never>()
  let streams = 0
  const track = (first: Chunk) =>
    Effect.sync(() => {
      if (first.type === "stop_reason") return () => Effect.void
      reading.add()
      return (end: StreamEnd) =>
        end.complete
          ? Effect.sync(reading.remove)
          : FiberMap.run(
            followers,
            `${first.run_id}#${++streams}`,
            Stream.runDrain(backend.streamRun(first.run_id, { after: end.lastSeq })).pipe(
              Effect.catchAllCause((cause) => Effect.logWarning(`lost track of run ${first.run_id}`, cause))
            )
          ).pipe(Effect.ensuring(Effect.sync(reading.remove)), Effect.asVoid)
    })

  const nodeServer = Http.createServer()
  const responses = openResponses(nodeServer)
  const app = HttpApiBuilder.serve().pipe(
    Layer.provide(HttpApiSwagger.layer({ path: "/docs" })),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
    Layer.provide(gateLayer({ token, draining, maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES })),
    Layer.provide(HttpApiBuilder.api(BatonApi).pipe(
      Layer.provide(handlersLayer({
        sse: { heartbeatMs: options.heartbeatMs ?? 15_000, closing: Deferred.await(closing) },
        defaults: options.conversationDefaults ?? {},
        track,
        ...(options.pricing !== undefined ? { pricing: options.pricing } : {}),
        ...(runner !== undefined ? { health: Effect.map(runner, (r) => ({ status: "ok" as const, runner: r })) } : {})
      }))
    )),
    Layer.provide(NodeHttpServer.layer(() => nodeServer, { host, port })),
    Layer.provide(Layer.succeed(Backend, backend))
  )
  yield* Layer.buildWithScope(app, scope).pipe(
    // Each request is its own trace (or its client's, by traceparent), not a child of the server's lifetime.
    Effect.withParentSpan(noParentSpan),
    Effect.mapError((e) => new ServerStartError({ reason: "listen", message: `cannot listen on ${host}:${port}: ${String(e.cause)}` }))
  )

  // Added after the server's own finalizers, so it runs before them: drain first, then close.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* Ref.set(draining, true)
      const closed = yield* Deferred.make<void>()
      nodeServer.close(() => Deferred.unsafeDone(closed, Exit.void))
      // Runs reach their stop reason, then their streams deliver it and end by themselves.
      const drained = yield* withinMs(drainTimeoutMs, Effect.zipRight(Effect.zipRight(reading.none, FiberMap.awaitEmpty(followers)), responses.done))
      if (Option.isNone(drained) && runner === undefined) {
        const left = (yield* FiberMap.size(followers)) + reading.count()
        yield* Effect.logWarning(`${left} run(s) still active after ${drainTimeoutMs} ms; the next start closes them as failed`)
      }
      yield* Deferred.succeed(closing, undefined)
      yield* withinMs(1_000, responses.done)
      nodeServer.closeAllConnections()
      yield* withinMs(1_000, Deferred.await(closed))
    })
  )

  const address = nodeServer.address()
  const bound = typeof address === "object" && address !== null ? address.port : port
  return BatonServer.of({ host, port: bound, url: urlOf(host, bound) })
})

/**
 * `baton serve`: the conversation actors of a Backend behind HTTP + SSE (services/backend/HttpApi.ts).
 * Closing the layer (SIGTERM in the CLI) stops accepting, lets active runs reach a stop reason for
 * up to `drainTimeoutMs`, ends the open streams and closes the listener; runs still active are left
 * to the local backend's start-up rule (closed as failed).
 */
export const serve = (options: ServeOptions = {}): Layer.Layer<BatonServer, ServerStartError, Backend> =>
  Layer.scoped(BatonServer, make(options))

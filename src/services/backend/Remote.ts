import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Effect, Either, Layer, ParseResult, type Redacted, Schema, Stream } from "effect"
import { ConversationSettings } from "../../domain/Conversation.js"
import { type BackendError, InvalidInput, StreamBroken } from "../../domain/Errors.js"
import type { Chunk } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import { type Budgets, reconnectsOnly, turnBudgets } from "../../domain/Recovery.js"
import { retry } from "../../domain/RecoverySchedule.js"
import { Telemetry } from "../../domain/Telemetry.js"
import { Backend } from "../Backend.js"
import { BatonApi } from "./HttpApi.js"
import { chunksOf, Dropped, resumable } from "./RemoteRunStream.js"

/**
 * services/backend/ holds the remote Backend adapter: this module (the typed HTTP client of
 * `baton serve`), the HTTP API it shares with the server (HttpApi, HttpErrors) and RemoteRunStream,
 * which keeps a run's stream whole across dropped connections.
 */

export interface RemoteOptions {
  /** Base URL of `baton serve`, e.g. `http://127.0.0.1:8283`. */
  readonly url: string
  /** Sent as `Authorization: Bearer …` when the server has a token. */
  readonly token?: Redacted.Redacted<string> | undefined
  /** Reconnect budget of a run's stream; default the turn budget (5 reconnects, 250 ms doubling). */
  readonly budgets?: Budgets
  /** A stream connection silent this long is dead (the server sends heartbeats every 15 s); default 45 s. */
  readonly idleTimeoutMs?: number
  /** Told before each wait for an unreachable server (a call retried on the reconnect budget), with its length. */
  readonly onWait?: (wait: RemoteWait) => Effect.Effect<void>
}

/** A call waiting for the server: which call, why, and how long until it is tried again. */
export interface RemoteWait {
  readonly call: string
  readonly message: string
  readonly retryInMs: number
}

type ClientFailure = BackendError | HttpApiDecodeError | HttpClientError.HttpClientError | ParseResult.ParseError

/** Transport and protocol failures become StreamBroken: the server could not be talked to. */
const toBackendError = (e: ClientFailure): BackendError => {
  switch (e._tag) {
    case "HttpApiDecodeError":
      return new InvalidInput({ message: e.message })
    case "RequestError":
      // Refused, reset, unknown host: name the server and the likely fix, not the HTTP library's words.
      return new StreamBroken({
        message: `cannot reach the Baton server at ${new URL(e.request.url).origin} (${e.reason === "Transport" ? "connection failed" : e.reason}); is \`baton serve\` running there?`
      })
    case "ResponseError":
      return new StreamBroken({ message: `baton server: ${e.message}` })
    case "ParseError":
      return new StreamBroken({ message: `unexpected exchange with the baton server: ${ParseResult.TreeFormatter.formatErrorSync(e)}` })
    default:
      return e
  }
}

const call = <A>(effect: Effect.Effect<A, ClientFailure>): Effect.Effect<A, BackendError> => Effect.mapError(effect, toBackendError)

/** A connection refused: nothing listens there (yet), so nothing was sent. */
const refused = (cause: unknown): boolean => {
  let current: unknown = cause
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if ("code" in current && current.code === "ECONNREFUSED") return true
    if ("errors" in current && Array.isArray(current.errors) && current.errors.some(refused)) return true
    current = "cause" in current ? current.cause : undefined
  }
  return false
}

/**
 * Whether the server surely never acted on the request: the connection was refused, or it answered
 * 503 (draining for a restart: Unavailable, decoded as StreamBroken). A connection that broke after
 * the request left may have been acted on.
 */
const neverAdmitted = (e: ClientFailure): boolean =>
  e._tag === "StreamBroken" || (e._tag === "RequestError" && e.reason === "Transport" && refused(e.cause))

/**
 * The Backend as an HTTP client of `baton serve`, derived from the same HttpApi. Run streams reconnect
 * on their own (RemoteRunStream), so a Session sees one unbroken stream and the same tagged errors as
 * with the local backend.
 */
export const makeBackendRemote = (options: RemoteOptions) =>
  Effect.gen(function*() {
    const token = options.token
    // One connection per call, never a pooled one: a refused connection then proves the request was
    // never sent, and no call fails on a socket the restarted server closed while it sat idle.
    const client = yield* HttpApiClient.make(BatonApi, {
      baseUrl: options.url,
      transformClient: HttpClient.mapRequest((request) =>
        HttpClientRequest.setHeader(token === undefined ? request : HttpClientRequest.bearerToken(request, token), "connection", "close")
      )
    })
    const budgets = options.budgets ?? turnBudgets
    // A stream's span costs each of its chunks ~25 Effect steps (the span provided to every pull): only
    // when a tracing backend is there to receive it. Read once, as the run log does.
    const { tracing } = yield* Telemetry
    const spanned = (name: string) => <A, E>(stream: Stream.Stream<A, E>) => (tracing ? Stream.withSpan(stream, name) : stream)
    const idleMs = options.idleTimeoutMs ?? 45_000
    const onWait = options.onWait
    const announce = (name: string) =>
      onWait === undefined ? {} : { announce: (step: { readonly failure: BackendError }, retryInMs: number) => onWait({ call: name, message: step.failure.message, retryInMs }) }

    // A server restarting is waited for on the reconnect ladder; every answer it gives is the caller's.
    const patiently = <A>(name: string, effect: Effect.Effect<A, BackendError>): Effect.Effect<A, BackendError> =>
      retry(effect, { budgets: reconnectsOnly(budgets), ...announce(name), orElse: Effect.fail })
    /** An idempotent call (a read, or one the server makes safe twice): resent after any drop. */
    const idempotent = <A>(name: string, effect: Effect.Effect<A, ClientFailure>) => patiently(name, call(effect))
    /** A call that must not be acted on twice: resent only when the server surely never took it. */
    const once = <A>(name: string, effect: Effect.Effect<A, ClientFailure>): Effect.Effect<A, BackendError> =>
      patiently(
        name,
        effect.pipe(
          Effect.map(Either.right),
          Effect.catchAll((e) => (neverAdmitted(e) ? Effect.fail(toBackendError(e)) : Effect.succeed(Either.left(toBackendError(e)))))
        )
      ).pipe(Effect.flatten)

    const connect = (
      request: Effect.Effect<readonly [void, HttpClientResponse.HttpClientResponse], ClientFailure>
    ): Stream.Stream<Chunk, BackendError | Dropped> =>
      Stream.unwrap(request.pipe(
        Effect.mapError(toBackendError),
        // 503 (a server shutting down) and network failures are drops: reconnect, do not fail.
        Effect.catchTag("StreamBroken", (e) => Effect.fail(new Dropped({ message: e.message }))),
        Effect.map(([, response]) => chunksOf(response, idleMs))
      ))

    const follow = (runId: RunId, after: number) =>
      connect(client.runs.stream({ path: { id: runId }, urlParams: { after }, headers: {}, withResponse: true }))

    return Backend.of({
      createConversation: Effect.fn("BackendRemote.createConversation")(function*(settings, opts) {
        const decoded = yield* Effect.mapError(Schema.decodeUnknown(ConversationSettings)(settings), (e) =>
          new InvalidInput({ message: `invalid conversation settings: ${ParseResult.TreeFormatter.formatErrorSync(e)}` }))
        return yield* once("createConversation", client.conversations.create({
          payload: {
            settings: decoded,
            ...(opts?.title === undefined ? {} : { title: opts.title }),
            ...(opts?.parent === undefined ? {} : { parent: opts.parent })
          }
        }))
      }),
      getConversation: Effect.fn("BackendRemote.getConversation")(function*(id) {
        return yield* idempotent("getConversation", client.conversations.get({ path: { id } }))
      }),
      listConversations: Effect.fn("BackendRemote.listConversations")(function*(opts) {
        return yield* idempotent("listConversations", client.conversations.list({ urlParams: opts ?? {} }))
      }),
      updateConversation: Effect.fn("BackendRemote.updateConversation")(function*(id, patch) {
        return yield* idempotent("updateConversation", client.conversations.update({ path: { id }, payload: patch }))
      }),
      // Resending the same input is safe: its otids make the server return the run they started.
      send: (id, input) =>
        resumable(
          (cursor) =>
            cursor.runId === undefined
              ? connect(client.runs.send({ path: { id }, payload: input, withResponse: true }))
              : follow(cursor.runId, cursor.after),
          { budgets }
        ).pipe(spanned("BackendRemote.send")),
      getRun: Effect.fn("BackendRemote.getRun")(function*(runId) {
        return yield* idempotent("getRun", client.runs.getRun({ path: { id: runId } }))
      }),
      streamRun: (runId, opts) =>
        resumable((cursor) => follow(runId, cursor.after), { budgets, runId, after: opts?.after ?? 0 }).pipe(
          spanned("BackendRemote.streamRun")
        ),
      // Its carry-over is recorded by each cancel that arrives: resent only when it surely never did.
      cancel: Effect.fn("BackendRemote.cancel")(function*(id, carryOver) {
        return yield* once("cancel", client.runs.cancel({ path: { id }, payload: carryOver ?? {} }))
      }),
      // Idempotent by its otid, so a dropped connection is retried on the reconnect budget (a server restarting).
      submitResult: Effect.fn("BackendRemote.submitResult")(function*(id, result, opts) {
        const post = call(client.conversations.submitResult({
          path: { id },
          payload: { result, ...(opts?.decision !== undefined ? { decision: opts.decision } : {}) }
        }))
        return yield* retry(post, { budgets, ...announce("submitResult"), orElse: Effect.fail })
      }),
      pendingApprovals: Effect.fn("BackendRemote.pendingApprovals")(function*(id) {
        return yield* idempotent("pendingApprovals", client.conversations.pendingApprovals({ path: { id } }))
      }),
      history: Effect.fn("BackendRemote.history")(function*(id, cursor) {
        return yield* idempotent("history", client.conversations.history({ path: { id }, urlParams: cursor ?? {} }))
      }),
      backfill: Effect.fn("BackendRemote.backfill")(function*(id) {
        return yield* idempotent("backfill", client.conversations.backfill({ path: { id } }))
      }),
      skipReconnectWait: Effect.fn("BackendRemote.skipReconnectWait")(function*(id) {
        return yield* idempotent("skipReconnectWait", client.conversations.skipReconnectWait({ path: { id } }))
      }),
      // A compaction has no otid: once its POST may have been admitted it is never resent, only followed.
      compact: (id, reason) =>
        Stream.suspend(() => {
          let posted = false
          return resumable((cursor) => {
            if (cursor.runId !== undefined) return follow(cursor.runId, cursor.after)
            if (posted) return Stream.fail(new StreamBroken({ message: "the compaction request was cut off before its first chunk" }))
            posted = true
            return connect(client.runs.compact({ path: { id }, payload: { reason }, withResponse: true }))
          }, { budgets })
        }).pipe(spanned("BackendRemote.compact")),
      compactability: Effect.fn("BackendRemote.compactability")(function*(id) {
        return (yield* idempotent("compactability", client.conversations.compactability({ path: { id } }))).compactability
      }),
      generateTitle: Effect.fn("BackendRemote.generateTitle")(function*(id) {
        return (yield* once("generateTitle", client.conversations.generateTitle({ path: { id } }))).title
      }),
      fork: Effect.fn("BackendRemote.fork")(function*(id, opts) {
        return yield* once("fork", client.conversations.fork({ path: { id }, payload: opts?.at === undefined ? {} : { at: opts.at } }))
      }),
      steer: Effect.fn("BackendRemote.steer")(function*(id, text) {
        return yield* once("steer", client.conversations.steer({ path: { id }, payload: { text } }))
      }),
      heldSteering: Effect.fn("BackendRemote.heldSteering")(function*(id) {
        return yield* idempotent("heldSteering", client.conversations.heldSteering({ path: { id } }))
      }),
      takeSteering: Effect.fn("BackendRemote.takeSteering")(function*(id) {
        return yield* once("takeSteering", client.conversations.takeSteering({ path: { id } }))
      }),
      // The server's pricing applies: the accounting is the server's.
      usage: Effect.fn("BackendRemote.usage")(function*(query) {
        return yield* idempotent("usage", client.usage.usage({
          urlParams: {
            ...(query?.conversationId !== undefined ? { conversation: query.conversationId } : {}),
            ...(query?.since !== undefined ? { since: query.since } : {})
          }
        }))
      }),
      exportTrace: Effect.fn("BackendRemote.exportTrace")(function*(id, segment) {
        return yield* idempotent("exportTrace", client.conversations.trace({ path: { id, segment } }))
      })
    })
  })

/** `Backend.layerRemote`: a drop-in for `layerLocal` talking to `baton serve` at `url`. */
export const layerRemote = (options: RemoteOptions): Layer.Layer<Backend> =>
  Layer.effect(Backend, makeBackendRemote(options)).pipe(Layer.provide(FetchHttpClient.layer))

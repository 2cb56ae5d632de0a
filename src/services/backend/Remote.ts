import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import type { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Effect, Layer, ParseResult, type Redacted, Schema, Stream } from "effect"
import { ConversationSettings } from "../../domain/Conversation.js"
import { type BackendError, InvalidInput, StreamBroken } from "../../domain/Errors.js"
import type { Chunk } from "../../domain/Events.js"
import type { RunId } from "../../domain/Ids.js"
import { type Budgets, turnBudgets } from "../../domain/Recovery.js"
import { retry } from "../../domain/RecoverySchedule.js"
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

/**
 * The Backend as an HTTP client of `baton serve`, derived from the same HttpApi. Run streams reconnect
 * on their own (RemoteRunStream), so a Session sees one unbroken stream and the same tagged errors as
 * with the local backend.
 */
export const makeBackendRemote = (options: RemoteOptions) =>
  Effect.gen(function*() {
    const token = options.token
    const client = yield* HttpApiClient.make(BatonApi, {
      baseUrl: options.url,
      ...(token === undefined ? {} : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token)) })
    })
    const budgets = options.budgets ?? turnBudgets
    const idleMs = options.idleTimeoutMs ?? 45_000

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
        return yield* call(client.conversations.create({
          payload: {
            settings: decoded,
            ...(opts?.title === undefined ? {} : { title: opts.title }),
            ...(opts?.parent === undefined ? {} : { parent: opts.parent })
          }
        }))
      }),
      getConversation: Effect.fn("BackendRemote.getConversation")(function*(id) {
        return yield* call(client.conversations.get({ path: { id } }))
      }),
      listConversations: Effect.fn("BackendRemote.listConversations")(function*(opts) {
        return yield* call(client.conversations.list({ urlParams: opts ?? {} }))
      }),
      updateConversation: Effect.fn("BackendRemote.updateConversation")(function*(id, patch) {
        return yield* call(client.conversations.update({ path: { id }, payload: patch }))
      }),
      // Resending the same input is safe: its otids make the server return the run they started.
      send: (id, input) =>
        resumable(
          (cursor) =>
            cursor.runId === undefined
              ? connect(client.runs.send({ path: { id }, payload: input, withResponse: true }))
              : follow(cursor.runId, cursor.after),
          { budgets }
        ).pipe(Stream.withSpan("BackendRemote.send")),
      getRun: Effect.fn("BackendRemote.getRun")(function*(runId) {
        return yield* call(client.runs.getRun({ path: { id: runId } }))
      }),
      streamRun: (runId, opts) =>
        resumable((cursor) => follow(runId, cursor.after), { budgets, runId, after: opts?.after ?? 0 }).pipe(
          Stream.withSpan("BackendRemote.streamRun")
        ),
      cancel: Effect.fn("BackendRemote.cancel")(function*(id, carryOver) {
        return yield* call(client.runs.cancel({ path: { id }, payload: carryOver ?? {} }))
      }),
      // Idempotent by its otid, so a dropped connection is retried on the reconnect budget (a server restarting).
      submitResult: Effect.fn("BackendRemote.submitResult")(function*(id, result, opts) {
        const post = call(client.conversations.submitResult({
          path: { id },
          payload: { result, ...(opts?.decision !== undefined ? { decision: opts.decision } : {}) }
        }))
        return yield* retry(post, { budgets, orElse: Effect.fail })
      }),
      pendingApprovals: Effect.fn("BackendRemote.pendingApprovals")(function*(id) {
        return yield* call(client.conversations.pendingApprovals({ path: { id } }))
      }),
      history: Effect.fn("BackendRemote.history")(function*(id, cursor) {
        return yield* call(client.conversations.history({ path: { id }, urlParams: cursor ?? {} }))
      }),
      backfill: Effect.fn("BackendRemote.backfill")(function*(id) {
        return yield* call(client.conversations.backfill({ path: { id } }))
      }),
      skipReconnectWait: Effect.fn("BackendRemote.skipReconnectWait")(function*(id) {
        return yield* call(client.conversations.skipReconnectWait({ path: { id } }))
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
        }).pipe(Stream.withSpan("BackendRemote.compact")),
      compactability: Effect.fn("BackendRemote.compactability")(function*(id) {
        return (yield* call(client.conversations.compactability({ path: { id } }))).compactability
      }),
      generateTitle: Effect.fn("BackendRemote.generateTitle")(function*(id) {
        return (yield* call(client.conversations.generateTitle({ path: { id } }))).title
      }),
      fork: Effect.fn("BackendRemote.fork")(function*(id, opts) {
        return yield* call(client.conversations.fork({ path: { id }, payload: opts?.at === undefined ? {} : { at: opts.at } }))
      }),
      steer: Effect.fn("BackendRemote.steer")(function*(id, text) {
        return yield* call(client.conversations.steer({ path: { id }, payload: { text } }))
      }),
      heldSteering: Effect.fn("BackendRemote.heldSteering")(function*(id) {
        return yield* call(client.conversations.heldSteering({ path: { id } }))
      }),
      takeSteering: Effect.fn("BackendRemote.takeSteering")(function*(id) {
        return yield* call(client.conversations.takeSteering({ path: { id } }))
      }),
      // The server's pricing applies: the accounting is the server's.
      usage: Effect.fn("BackendRemote.usage")(function*(query) {
        return yield* call(client.usage.usage({
          urlParams: {
            ...(query?.conversationId !== undefined ? { conversation: query.conversationId } : {}),
            ...(query?.since !== undefined ? { since: query.since } : {})
          }
        }))
      }),
      exportTrace: Effect.fn("BackendRemote.exportTrace")(function*(id, segment) {
        return yield* call(client.conversations.trace({ path: { id, segment } }))
      })
    })
  })

/** `Backend.layerRemote`: a drop-in for `layerLocal` talking to `baton serve` at `url`. */
export const layerRemote = (options: RemoteOptions): Layer.Layer<Backend> =>
  Layer.effect(Backend, makeBackendRemote(options)).pipe(Layer.provide(FetchHttpClient.layer))

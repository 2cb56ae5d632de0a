import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Layer, ParseResult, Schema } from "effect"
import { Conversation, type ConversationSettingsInput } from "../../domain/Conversation.js"
import { InvalidInput } from "../../domain/Errors.js"
import type { RunId } from "../../domain/Ids.js"
import type { Pricing } from "../../domain/Usage.js"
import { Backend } from "../../services/Backend.js"
import { BatonApi, CarryOverJson, CreateConversationJson, ForkJson, type Health } from "../../services/backend/HttpApi.js"
import { type SseOptions, sseResponse, type Track } from "./Sse.js"

/** What the handlers need from the server around them. */
export interface HandlerContext {
  readonly sse: SseOptions
  /** What a conversation created without settings starts with (the server's settings files). */
  readonly defaults: ConversationSettingsInput
  /** Called with the first chunk of every run started here, so shutdown can wait for it. */
  readonly track: Track
  /** The server's settings `pricing`, for `GET /v1/usage`. */
  readonly pricing?: Pricing
  /** What /healthz says besides "ok" (a cluster runner's address and shards). */
  readonly health?: Effect.Effect<typeof Health.Type>
}

/**
 * Where a resumed stream starts: a `Last-Event-ID` (`<runId>:<seq>`, sent by an EventSource on reconnect)
 * naming this run wins over `?after=`, being the more recent of the two.
 */
export const resumeAfter = (runId: RunId, lastEventId: string | undefined, after: number | undefined): number => {
  if (lastEventId !== undefined) {
    const colon = lastEventId.lastIndexOf(":")
    const seq = Number(lastEventId.slice(colon + 1))
    if (colon > 0 && lastEventId.slice(0, colon) === runId && Number.isInteger(seq) && seq >= 0) return seq
  }
  return after ?? 0
}

const decodeCarryOver = Schema.decodeUnknown(Schema.parseJson(CarryOverJson))
const decodeCreate = Schema.decodeUnknown(Schema.parseJson(CreateConversationJson))
const decodeFork = Schema.decodeUnknown(Schema.parseJson(ForkJson))

/** A body that may be absent: empty means `{}`; anything else must decode, or it is InvalidInput naming `what`. */
const optionalBody = <A>(request: HttpServerRequest.HttpServerRequest, what: string, decode: (text: string) => Effect.Effect<A, ParseResult.ParseError>, empty: A) =>
  Effect.gen(function*() {
    // A body over the limit is the gate's to answer (413); any other read failure is the request's.
    const text = yield* Effect.catchAll(request.text, (e) =>
      e.cause instanceof Error && e.cause.message === "maxBytes exceeded"
        ? Effect.die(e)
        : Effect.fail(new InvalidInput({ message: "could not read the request body" })))
    if (text.trim() === "") return empty
    return yield* Effect.mapError(decode(text), (e) => new InvalidInput({ message: `invalid ${what}: ${ParseResult.TreeFormatter.formatErrorSync(e)}` }))
  })

const conversations = (context: HandlerContext) => HttpApiBuilder.group(BatonApi, "conversations", (handlers) =>
  Effect.map(Backend, (backend) =>
    handlers
      // Raw, so that a POST without a body creates a conversation with the defaults, like `{}`.
      .handleRaw("create", ({ request }) =>
        Effect.gen(function*() {
          const payload = yield* optionalBody(request, "conversation", decodeCreate, {})
          const conversation = yield* backend.createConversation(
            payload.settings ?? context.defaults,
            {
              ...(payload.title === undefined ? {} : { title: payload.title }),
              ...(payload.parent === undefined ? {} : { parent: payload.parent })
            }
          )
          return HttpServerResponse.unsafeJson(yield* Effect.orDie(Schema.encode(Conversation)(conversation)), { status: 201 })
        }))
      .handle("list", ({ urlParams }) => backend.listConversations(urlParams))
      .handle("get", ({ path }) => backend.getConversation(path.id))
      .handle("update", ({ path, payload }) => backend.updateConversation(path.id, payload))
      .handle("pendingApprovals", ({ path }) => backend.pendingApprovals(path.id))
      .handle("submitResult", ({ path, payload }) =>
        backend.submitResult(path.id, payload.result, payload.decision !== undefined ? { decision: payload.decision } : undefined))
      .handle("history", ({ path, urlParams }) => backend.history(path.id, urlParams))
      .handle("backfill", ({ path }) => backend.backfill(path.id))
      .handle("skipReconnectWait", ({ path }) => backend.skipReconnectWait(path.id))
      .handle("compactability", ({ path }) => Effect.map(backend.compactability(path.id), (compactability) => ({ compactability })))
      .handle("generateTitle", ({ path }) => Effect.map(backend.generateTitle(path.id), (title) => ({ title })))
      // Raw, so that a fork without a body (at the end) is accepted as `{}`.
      .handleRaw("fork", ({ path, request }) =>
        Effect.gen(function*() {
          const payload = yield* optionalBody(request, "fork", decodeFork, {})
          const fork = yield* backend.fork(path.id, payload)
          return HttpServerResponse.unsafeJson(yield* Effect.orDie(Schema.encode(Conversation)(fork)), { status: 201 })
        }))
      .handle("steer", ({ path, payload }) => backend.steer(path.id, payload.text))
      .handle("heldSteering", ({ path }) => backend.heldSteering(path.id))
      .handle("takeSteering", ({ path }) => backend.takeSteering(path.id))
      .handle("trace", ({ path }) => backend.exportTrace(path.id, path.segment))))

const runs = (context: HandlerContext) =>
  HttpApiBuilder.group(BatonApi, "runs", (handlers) =>
    Effect.map(Backend, (backend) =>
      handlers
        .handle("send", ({ path, payload }) => sseResponse(backend.send(path.id, payload), context.sse, context.track))
        .handle("compact", ({ path, payload }) => sseResponse(backend.compact(path.id, payload.reason), context.sse, context.track))
        .handle("getRun", ({ path }) => backend.getRun(path.id))
        .handle("stream", ({ headers, path, urlParams }) =>
          sseResponse(backend.streamRun(path.id, { after: resumeAfter(path.id, headers["last-event-id"], urlParams.after) }), context.sse))
        // Raw, so that a cancel without a body (nothing to carry over) is accepted as `{}`.
        .handleRaw("cancel", ({ path, request }) =>
          Effect.flatMap(optionalBody(request, "carry-over", decodeCarryOver, {}), (carryOver) => backend.cancel(path.id, carryOver)))))

const usage = (context: HandlerContext) =>
  HttpApiBuilder.group(BatonApi, "usage", (handlers) =>
    Effect.map(Backend, (backend) =>
      handlers.handle("usage", ({ urlParams }) =>
        backend.usage({
          ...(urlParams.conversation !== undefined ? { conversationId: urlParams.conversation } : {}),
          ...(urlParams.since !== undefined ? { since: urlParams.since } : {}),
          ...(context.pricing !== undefined ? { pricing: context.pricing } : {})
        }))))

const health = (context: HandlerContext) => HttpApiBuilder.group(BatonApi, "health", (handlers) =>
  Effect.succeed(handlers.handle("healthz", () => context.health ?? Effect.succeed({ status: "ok" as const }))))

/** Every endpoint's handler: thin calls into the Backend service. */
export const handlersLayer = (context: HandlerContext) => Layer.mergeAll(conversations(context), runs(context), usage(context), health(context))

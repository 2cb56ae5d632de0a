import * as Sse from "@effect/experimental/Sse"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Context, Data, Duration, Effect, Layer, Option, ParseResult, Redacted, Schema, Stream } from "effect"
import * as Http from "node:http"
import type { Conversation } from "../../domain/Conversation.js"
import { Decision } from "../../domain/Events.js"
import { ConversationId, ToolCallId } from "../../domain/Ids.js"
import type { Backend } from "../../services/Backend.js"
import { realClock } from "../../services/RealClock.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import { InvalidInput, ToolCallAnswered } from "../../domain/Errors.js"
import { errorAnswer } from "../../services/backend/HttpErrors.js"
import { isLoopbackHost, payloadTooLarge } from "../server/Auth.js"
import { HEARTBEAT } from "../server/Sse.js"
import { makeGuard } from "./Guard.js"
import { loadPage, type Page } from "./Page.js"
import { type Entry, resumeAfter } from "./TaskLog.js"
import type { HostOptions } from "./Hosted.js"
import { make as makeHost, type WebHost } from "./WebHost.js"

export const DEFAULT_WEB_PORT = 8284

const MAX_BODY_BYTES = 1024 * 1024

export interface WebOptions extends HostOptions {
  /** Default 127.0.0.1; any other address needs a token. */
  readonly host?: string | undefined
  /** Default 8284; 0 picks a free port. */
  readonly port?: number | undefined
  readonly token?: Redacted.Redacted<string> | undefined
  /** SSE heartbeat period; default 15 s. */
  readonly heartbeatMs?: number
}

export class WebStartError extends Data.TaggedError("WebStartError")<{
  readonly reason: "insecure_bind" | "empty_token" | "listen" | "page"
  readonly message: string
}> {}

/** The running page's address; `url` is what to open (with the one-time token when there is one). */
export class BatonWeb extends Context.Tag("baton/Web")<BatonWeb, {
  readonly url: string
  readonly origin: string
}>() {}

/** An error in `baton serve`'s form: its status and JSON (`code`, `message`), from the one mapping both use. */
const failure = (error: { readonly message: string }) => {
  const answer = errorAnswer(error)
  return HttpServerResponse.unsafeJson(answer.body, { status: answer.status })
}

/** A conversation as the page lists it (its tool list and prompts stay on the host). */
const summary = (c: Conversation) => ({ id: c.id, title: c.title, created_at: c.created_at, updated_at: c.updated_at })

const ok = (body: unknown = { ok: true }) => HttpServerResponse.unsafeJson(body)

/** Text the user typed: surrounding whitespace dropped, and something must be left. */
const Typed = Schema.Trim.pipe(Schema.compose(Schema.NonEmptyString.annotations({ message: () => "the message is empty" })))
const PromptBody = Schema.Struct({ prompt: Typed })
const SteerBody = Schema.Struct({ text: Typed })
const AnswerBody = Schema.Struct({ decision: Decision })
const Params = Schema.Struct({ id: ConversationId })
const CallParams = Schema.Struct({ id: ConversationId, call: Schema.NonEmptyTrimmedString })

const UsageParams = Schema.Struct({ conversation: Schema.optionalWith(ConversationId, { exact: true }) })

const hostedOf = (web: WebHost) => Effect.flatMap(HttpRouter.schemaPathParams(Params), ({ id }) => web.get(id))

/** A state's or event's SSE frame, written by the encoder `baton serve` uses; the id resumes this log on a reconnect. */
const frame = (epoch: string, id: number, kind: "event" | "state", data: string) =>
  Sse.encoder.write({ _tag: "Event", event: kind === "event" ? "message" : kind, id: `${epoch}:${id}`, data })

/**
 * The page may not be framed (another site could lay it under its own buttons and have you click
 * Allow) and loads nothing but its own script.
 */
const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
}

const RESET = Sse.encoder.write({ _tag: "Event", event: "reset", id: undefined, data: "reset" })

/** A browser reconnects a second after a broken stream (its default is longer). */
const RETRY = Sse.encoder.write(new Sse.Retry({ duration: Duration.seconds(1), lastEventId: undefined }))

/**
 * After a replayed wait, how long ago it was announced, so a page that loads mid-wait counts down
 * what is left, not the whole delay. No id: it does not move the page's resume point.
 */
const age = (entry: Entry) =>
  entry.waitSince !== undefined ? Sse.encoder.write({ _tag: "Event", event: "age", id: undefined, data: String(Math.max(0, Date.now() - entry.waitSince)) }) : ""

/** The conversation's log as `text/event-stream`: after Last-Event-ID (a reconnect) or `?after=` (a page that loaded a snapshot). */
const events = (web: WebHost, heartbeatMs: number) =>
  Effect.gen(function*() {
    const hosted = yield* hostedOf(web)
    const request = yield* HttpServerRequest.HttpServerRequest
    const lastEventId = request.headers["last-event-id"]
    const query = Number(new URL(request.url, "http://x").searchParams.get("after") ?? Number.NaN)
    const after = lastEventId !== undefined
      ? resumeAfter(web.epoch, lastEventId)
      : Number.isSafeInteger(query) && query >= 0 ? Option.some(query) : Option.some(yield* hosted.log.last)
    const body = Option.match(after, {
      // Another process's id (the host restarted): the page loads the conversation again.
      onNone: () => Stream.make(RESET),
      onSome: (n) =>
        hosted.log.follow(n).pipe(
          Stream.takeUntil((f) => f._tag === "Reset"),
          Stream.map((f) => (f._tag === "Reset" ? RESET : frame(web.epoch, f.entry.id, f.entry.kind, f.entry.data) + age(f.entry))),
          Stream.merge(Stream.repeatEffect(Effect.as(realClock.sleep(Duration.millis(heartbeatMs)), HEARTBEAT)), { haltStrategy: "left" })
        )
    })
    return HttpServerResponse.stream(Stream.concat(Stream.make(RETRY), body).pipe(Stream.encodeText), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
    })
  })

const routes = (web: WebHost, page: Page, heartbeatMs: number) =>
  HttpRouter.empty.pipe(
    HttpRouter.get("/", Effect.succeed(HttpServerResponse.html(page.html).pipe(HttpServerResponse.setHeaders(PAGE_HEADERS)))),
    HttpRouter.get("/favicon.ico", Effect.succeed(HttpServerResponse.empty({ status: 204 }))),
    HttpRouter.get("/app.js", Effect.succeed(HttpServerResponse.text(page.script, { contentType: "text/javascript; charset=utf-8" }))),
    HttpRouter.get("/app.css", Effect.succeed(HttpServerResponse.text(page.css, { contentType: "text/css; charset=utf-8" }))),
    HttpRouter.get("/api/info", Effect.succeed(ok(web.info))),
    HttpRouter.get("/api/conversations", Effect.map(web.list, (conversations) => ok({ workspace: web.workspace, conversations }))),
    HttpRouter.post("/api/conversations", Effect.map(web.create, (conversation) => ok({ conversation: summary(conversation) }))),
    HttpRouter.get("/api/conversations/:id", Effect.flatMap(hostedOf(web), (h) => Effect.map(h.snapshot, ok))),
    // The same report `baton serve` gives at this path and `baton usage --json` prints.
    HttpRouter.get("/v1/usage", Effect.flatMap(HttpServerRequest.schemaSearchParams(UsageParams), (query) => Effect.map(web.usage(query.conversation), ok))),
    HttpRouter.get(
      "/api/conversations/:id/subagents",
      Effect.flatMap(HttpRouter.schemaPathParams(Params), ({ id }) => Effect.map(web.subagents(id), (subagents) => ok({ subagents })))
    ),
    HttpRouter.get("/api/conversations/:id/usage", Effect.flatMap(hostedOf(web), (h) => Effect.map(h.usage, ok))),
    HttpRouter.get("/api/conversations/:id/backfill", Effect.flatMap(hostedOf(web), (h) => Effect.map(h.backfill, (items) => ok({ items })))),
    HttpRouter.get("/api/conversations/:id/events", events(web, heartbeatMs)),
    HttpRouter.post(
      "/api/conversations/:id/tasks",
      Effect.gen(function*() {
        const hosted = yield* hostedOf(web)
        const { prompt } = yield* HttpServerRequest.schemaBodyJson(PromptBody)
        yield* hosted.start(prompt)
        return HttpServerResponse.unsafeJson({ ok: true }, { status: 202 })
      })
    ),
    HttpRouter.post(
      "/api/conversations/:id/approvals/:call",
      Effect.gen(function*() {
        const { call, id } = yield* HttpRouter.schemaPathParams(CallParams)
        const hosted = yield* web.get(id)
        const { decision } = yield* HttpServerRequest.schemaBodyJson(AnswerBody)
        const won = yield* hosted.answer(call, decision)
        return won ? ok() : failure(new ToolCallAnswered({ conversationId: id, toolCallId: ToolCallId.make(call), message: `${call} is not waiting for an answer (answered already)` }))
      })
    ),
    HttpRouter.post(
      "/api/conversations/:id/steer",
      Effect.gen(function*() {
        const hosted = yield* hostedOf(web)
        const { text } = yield* HttpServerRequest.schemaBodyJson(SteerBody)
        return ok({ queued: yield* hosted.steer(text) })
      })
    ),
    HttpRouter.post("/api/conversations/:id/title", Effect.flatMap(hostedOf(web), (h) => Effect.map(h.generateTitle, (title) => ok({ title })))),
    HttpRouter.post("/api/conversations/:id/interrupt", Effect.flatMap(hostedOf(web), (h) => Effect.as(h.interrupt, ok()))),
    HttpRouter.post("/api/conversations/:id/skip-wait", Effect.flatMap(hostedOf(web), (h) => Effect.as(h.skipReconnectWait, ok()))),
    HttpRouter.post("/api/conversations/:id/retry", Effect.flatMap(hostedOf(web), (h) => Effect.as(h.retry, HttpServerResponse.unsafeJson({ ok: true }, { status: 202 }))))
  )

const urlOf = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}`

const make = Effect.fn("WebServer.make")(function*(options: WebOptions) {
  const host = options.host ?? "127.0.0.1"
  const token = options.token
  if (token !== undefined && Redacted.value(token).length === 0) {
    return yield* new WebStartError({ reason: "empty_token", message: "the token must not be empty" })
  }
  if (token === undefined && !isLoopbackHost(host)) {
    return yield* new WebStartError({
      reason: "insecure_bind",
      message: `refusing to listen on ${host} without a token: the page runs shell commands in your workspace. Set --token, or bind 127.0.0.1.`
    })
  }
  const page = yield* loadPage.pipe(Effect.mapError((message) => new WebStartError({ reason: "page", message })))
  const web = yield* makeHost(options)
  const nodeServer = Http.createServer()
  const port = () => {
    const address = nodeServer.address()
    return typeof address === "object" && address !== null ? address.port : 0
  }
  const guard = makeGuard({ host, port, token })
  const router = routes(web, page, options.heartbeatMs ?? 15_000)
  const app = Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const refused = guard(request)
    if (refused !== undefined) return refused
    if (Number(request.headers["content-length"] ?? 0) > MAX_BODY_BYTES) {
      // Read and dropped, never kept: the client gets the answer instead of a reset mid-upload.
      NodeHttpServerRequest.toIncomingMessage(request).resume()
      return payloadTooLarge(MAX_BODY_BYTES)
    }
    return yield* router
  }).pipe(
    // Requests here are small JSON; a body past this is refused before it fills memory.
    HttpServerRequest.withMaxBodySize(Option.some(MAX_BODY_BYTES)),
    Effect.catchTags({
      RouteNotFound: (e) => Effect.succeed(HttpServerResponse.unsafeJson({ code: "not_found", message: `no such page: ${e.request.url}` }, { status: 404 }))
    }),
    Effect.catchAll((error) =>
      Effect.succeed(
        error._tag === "ParseError"
          ? failure(
            new InvalidInput({
              message: ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => `${i.path.join(".") || "body"}: ${i.message}`).join("; ")
            })
          )
          : error._tag === "RequestError"
          ? failure(new InvalidInput({ message: `the request body is not valid JSON: ${error.message}` }))
          : failure(error)
      ))
  )
  yield* Layer.buildWithScope(
    HttpServer.serve(app).pipe(Layer.provide(NodeHttpServer.layer(() => nodeServer, { host, port: options.port ?? DEFAULT_WEB_PORT }))),
    yield* Effect.scope
  ).pipe(Effect.mapError((e) => new WebStartError({ reason: "listen", message: `cannot listen on ${host}:${options.port ?? DEFAULT_WEB_PORT}: ${String(e.cause)}` })))
  // Runs before the listener's own close: open event streams would otherwise hold it open.
  yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
  const origin = urlOf(host, port())
  return BatonWeb.of({ origin, url: token !== undefined ? `${origin}/?token=${encodeURIComponent(Redacted.value(token))}` : `${origin}/` })
})

/** `baton web`: the session host and its page, for as long as the layer lives. */
export const serveWeb = (options: WebOptions): Layer.Layer<BatonWeb, WebStartError, Backend | ToolExecutor> =>
  Layer.scoped(BatonWeb, make(options))

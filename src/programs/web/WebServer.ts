import * as Sse from "@effect/experimental/Sse"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Data, Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import * as Http from "node:http"
import type { Conversation } from "../../domain/Conversation.js"
import { ToolCallAnswered } from "../../domain/Errors.js"
import { ToolCallId } from "../../domain/Ids.js"
import type { Backend } from "../../services/Backend.js"
import { realClock } from "../../services/RealClock.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"
import { gate, isLoopbackHost } from "../server/Auth.js"
import { HEARTBEAT } from "../server/Sse.js"
import type { Hosted, HostOptions } from "./Hosted.js"
import { loadPage, type Page } from "./Page.js"
import { type Entry, resumeAfter } from "./TaskLog.js"
import { WebApi } from "./WebApi.js"
import { make as makeHost, type WebHost } from "./WebHost.js"

/** The page's session cookie (HttpOnly, set from the one-time `/?token=…` URL). */
export const COOKIE = "baton_web"

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

/** A conversation as the page lists it (its tool list and prompts stay on the host). */
const summary = (c: Conversation) => ({ id: c.id, ...(c.title !== undefined ? { title: c.title } : {}), created_at: c.created_at, updated_at: c.updated_at })

const OK = { ok: true } as const

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
const events = (web: WebHost, hosted: Hosted, heartbeatMs: number, lastEventId: string | undefined, afterParam: string | undefined) =>
  Effect.gen(function*() {
    const query = Number(afterParam ?? Number.NaN)
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

const hostGroup = (web: WebHost) =>
  HttpApiBuilder.group(WebApi, "host", (handlers) =>
    Effect.succeed(
      handlers
        .handle("info", () => Effect.succeed(web.info))
        // The same report `baton serve` gives at this path and `baton usage --json` prints.
        .handle("usage", ({ urlParams }) => web.usage(urlParams.conversation))
    ))

const conversationsGroup = (web: WebHost, heartbeatMs: number) =>
  HttpApiBuilder.group(WebApi, "conversations", (handlers) =>
    Effect.succeed(
      handlers
        .handle("list", () => Effect.map(web.list, (conversations) => ({ workspace: web.workspace, conversations })))
        .handle("create", () => Effect.map(web.create, (conversation) => ({ conversation: summary(conversation) })))
        .handle("get", ({ path }) => Effect.flatMap(web.get(path.id), (h) => h.snapshot))
        .handle("subagents", ({ path }) => Effect.map(web.subagents(path.id), (subagents) => ({ subagents })))
        .handle("usage", ({ path }) => Effect.flatMap(web.get(path.id), (h) => h.usage))
        .handle("backfill", ({ path }) => Effect.flatMap(web.get(path.id), (h) => Effect.map(h.backfill, (items) => ({ items }))))
        .handle("events", ({ headers, path, urlParams }) =>
          Effect.flatMap(web.get(path.id), (h) => events(web, h, heartbeatMs, headers["last-event-id"], urlParams.after)))
    ))

const tasksGroup = (web: WebHost) =>
  HttpApiBuilder.group(WebApi, "tasks", (handlers) =>
    Effect.succeed(
      handlers
        .handle("start", ({ path, payload }) => Effect.flatMap(web.get(path.id), (h) => Effect.as(h.start(payload.prompt), OK)))
        .handle("answer", ({ path, payload }) =>
          Effect.gen(function*() {
            const hosted = yield* web.get(path.id)
            // The first answer wins; a later one (another tab's) hears that the call was answered.
            if (yield* hosted.answer(path.call, payload.decision)) return OK
            return yield* new ToolCallAnswered({
              conversationId: path.id,
              toolCallId: ToolCallId.make(path.call),
              message: `${path.call} is not waiting for an answer (answered already)`
            })
          }))
        .handle("steer", ({ path, payload }) => Effect.flatMap(web.get(path.id), (h) => Effect.map(h.steer(payload.text), (queued) => ({ queued }))))
        .handle("title", ({ path }) => Effect.flatMap(web.get(path.id), (h) => Effect.map(h.generateTitle, (title) => ({ title }))))
        .handle("interrupt", ({ path }) => Effect.flatMap(web.get(path.id), (h) => Effect.as(h.interrupt, OK)))
        .handle("skipWait", ({ path }) => Effect.flatMap(web.get(path.id), (h) => Effect.as(h.skipReconnectWait, OK)))
        .handle("retry", ({ path }) => Effect.flatMap(web.get(path.id), (h) => Effect.as(h.retry, OK)))
    ))

/** The page's own files: raw routes beside the API, behind the same gate. */
const pageRoutes = (page: Page) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.all([
      router.get("/", Effect.succeed(HttpServerResponse.html(page.html).pipe(HttpServerResponse.setHeaders(PAGE_HEADERS)))),
      router.get("/favicon.ico", Effect.succeed(HttpServerResponse.empty({ status: 204 }))),
      router.get("/app.js", Effect.succeed(HttpServerResponse.text(page.script, { contentType: "text/javascript; charset=utf-8" }))),
      router.get("/app.css", Effect.succeed(HttpServerResponse.text(page.css, { contentType: "text/css; charset=utf-8" })))
    ], { discard: true }))

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
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const app = HttpApiBuilder.serve().pipe(
    Layer.provide(pageRoutes(page)),
    Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/api/openapi.json" })),
    Layer.provide(HttpApiBuilder.middleware(WebApi, gate({
      token,
      maxBodyBytes: MAX_BODY_BYTES,
      unauthorized: "this page needs the token: open the URL `baton web` printed (…/?token=…)",
      page: { host, port, cookie: COOKIE }
    }))),
    Layer.provide(HttpApiBuilder.api(WebApi).pipe(
      Layer.provide(Layer.mergeAll(hostGroup(web), conversationsGroup(web, heartbeatMs), tasksGroup(web)))
    )),
    Layer.provide(NodeHttpServer.layer(() => nodeServer, { host, port: options.port ?? DEFAULT_WEB_PORT }))
  )
  yield* Layer.buildWithScope(app, yield* Effect.scope).pipe(
    Effect.mapError((e) => new WebStartError({ reason: "listen", message: `cannot listen on ${host}:${options.port ?? DEFAULT_WEB_PORT}: ${String(e.cause)}` }))
  )
  // Runs before the listener's own close: open event streams would otherwise hold it open.
  yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
  const origin = urlOf(host, port())
  return BatonWeb.of({ origin, url: token !== undefined ? `${origin}/?token=${encodeURIComponent(Redacted.value(token))}` : `${origin}/` })
})

/** `baton web`: the session host and its page, for as long as the layer lives. */
export const serveWeb = (options: WebOptions): Layer.Layer<BatonWeb, WebStartError, Backend | ToolExecutor> =>
  Layer.scoped(BatonWeb, make(options))

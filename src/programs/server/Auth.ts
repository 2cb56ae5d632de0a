import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Context, Effect, Option, Redacted, Ref, Schema } from "effect"
import * as Crypto from "node:crypto"
import { InvalidInput, StreamBroken, Unauthorized } from "../../domain/Errors.js"
import { BatonApi } from "../../services/backend/HttpApi.js"
import { ForbiddenJson, PayloadTooLargeJson, UnauthorizedJson, UnavailableJson } from "../../services/backend/HttpErrors.js"

/** 127.0.0.0/8, ::1 (also IPv4-mapped) and `localhost`; everything else may be reachable from elsewhere. */
export const isLoopbackHost = (host: string): boolean => {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true
  const v4 = h.startsWith("::ffff:") ? h.slice("::ffff:".length) : h
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4)
}

const digest = (text: string): Buffer => Crypto.createHash("sha256").update(text, "utf8").digest()

/**
 * A constant-time bearer check. Both sides are hashed first, so `timingSafeEqual` always compares
 * equal lengths and neither the token's content nor its length leaks through timing.
 */
export const bearerCheck = (token: Redacted.Redacted<string>) => {
  const expected = digest(Redacted.value(token))
  return (authorization: string | undefined): boolean => {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? "")
    const given = match?.[1]
    return given !== undefined && Crypto.timingSafeEqual(expected, digest(given))
  }
}

const PUBLIC_PATHS: ReadonlySet<string> = new Set(["/healthz"])

const shuttingDown = HttpServerResponse.unsafeJson(
  Schema.encodeSync(UnavailableJson)(new StreamBroken({ message: "the server is shutting down" })),
  { status: 503, headers: { connection: "close" } }
)

/** The default limit of a request body: far above any run's input, far below what could exhaust memory. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

/** The cap @effect/platform-node's server puts on every body it reads unless told otherwise. */
const SERVER_DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024

/** A body over the limit (413), as both `baton serve` and `baton web` answer it. */
export const payloadTooLarge = (limit: number) =>
  HttpServerResponse.unsafeJson(
    Schema.encodeSync(PayloadTooLargeJson)(new InvalidInput({ message: `the request body is larger than the limit of ${limit} bytes` })),
    { status: 413, headers: { connection: "close" } }
  )

/** A body that outgrew the limit while it was read (one sent without content-length). */
const exceededLimit = (cause: Cause.Cause<unknown>): boolean =>
  [...Cause.failures(cause), ...Cause.defects(cause)].some((e) =>
    typeof e === "object" && e !== null && "_tag" in e && e._tag === "RequestError" && "cause" in e &&
    e.cause instanceof Error && e.cause.message === "maxBytes exceeded")

/** No route matched: the same JSON error as every route's, where the router alone would answer an empty 404. */
const noRoute = (cause: Cause.Cause<unknown>, request: HttpServerRequest.HttpServerRequest): Option.Option<HttpServerResponse.HttpServerResponse> => {
  const failure = Cause.failureOption(cause)
  const missing = Option.isSome(failure) && typeof failure.value === "object" && failure.value !== null &&
    "_tag" in failure.value && failure.value._tag === "RouteNotFound"
  return missing
    ? Option.some(HttpServerResponse.unsafeJson(
      { code: "not_found", message: `no such route: ${request.method} ${request.url.split("?")[0] ?? ""}` },
      { status: 404 }
    ))
    : Option.none()
}

/** A request body that is not JSON dies inside HttpApi; the client should hear invalid_input instead. */
const toInvalidInput = (cause: Cause.Cause<unknown>): Option.Option<InvalidInput> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && failure.value instanceof HttpApiDecodeError) {
    const issues = failure.value.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "request"}: ${issue.message}`)
    return Option.some(new InvalidInput({ message: issues.length > 0 ? issues.join("; ") : failure.value.message }))
  }
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect) && typeof defect.value === "object" && defect.value !== null && "_tag" in defect.value) {
    if (defect.value._tag === "RequestError") return Option.some(new InvalidInput({ message: "the request body is not valid JSON" }))
  }
  return Option.none()
}

/** What a browser page adds to the gate: a session cookie in place of the bearer token, Host and Origin checks. */
export interface PageGate {
  /** The address bound (`--host`). */
  readonly host: string
  /** The port bound, read once the listener has one. */
  readonly port: () => number
  /** The session cookie's name; its value is a random one of this process. */
  readonly cookie: string
}

export interface GateOptions {
  readonly token: Redacted.Redacted<string> | undefined
  /** The largest request body accepted (413 above it). */
  readonly maxBodyBytes: number
  /** While true, everything is refused (503): the server is shutting down. */
  readonly draining?: Ref.Ref<boolean>
  /** Paths open without the token. */
  readonly publicPaths?: ReadonlySet<string>
  /** What a 401 tells the client to do. */
  readonly unauthorized?: string
  readonly page?: PageGate
}

const refuseUnauthorized = (message: string) =>
  HttpServerResponse.unsafeJson(Schema.encodeSync(UnauthorizedJson)(new Unauthorized({ message })), {
    status: 401,
    headers: { "www-authenticate": "Bearer" }
  })

const forbidden = (message: string) => HttpServerResponse.unsafeJson(Schema.encodeSync(ForbiddenJson)({ code: "forbidden", message }), { status: 403 })

const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD"])

/**
 * A browser page's checks, for a page that can run shell commands:
 * - Host: on a loopback bind, only the loopback names with our port, so a DNS-rebinding page (its own
 *   name resolving to 127.0.0.1) is refused; with a token the cookie plays that part.
 * - Token: without the bearer, the cookie set from the one-time URL (`/?token=…`, then a redirect that
 *   drops it from the address bar). The cookie is HttpOnly, a random value of this process: the page
 *   itself never holds a secret.
 * - Origin: every state-changing request not carrying the bearer must come from the served origin (a
 *   cross-site form or fetch from another page is refused).
 * Returns the refusal (or the cookie-setting redirect), or undefined to go on.
 */
const pageCheck = (page: PageGate, token: Redacted.Redacted<string> | undefined, unauthorizedMessage: string) => {
  const session = Crypto.randomBytes(32).toString("hex")
  const sessionDigest = digest(session)
  const tokenDigest = token !== undefined ? digest(Redacted.value(token)) : undefined
  const same = (given: string, expected: Buffer) => Crypto.timingSafeEqual(digest(given), expected)
  const loopback = isLoopbackHost(page.host)
  const allowedHosts = () => {
    const port = page.port()
    const bound = page.host.includes(":") ? `[${page.host}]` : page.host
    return new Set([`${bound}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`].map((h) => h.toLowerCase()))
  }
  return (request: HttpServerRequest.HttpServerRequest, byBearer: boolean): HttpServerResponse.HttpServerResponse | undefined => {
    const host = (request.headers.host ?? "").toLowerCase()
    if (loopback && !allowedHosts().has(host)) {
      return forbidden(`refused: Host "${host}" is not this server (a loopback page answers only to its own address)`)
    }
    if (tokenDigest !== undefined && !byBearer) {
      const url = new URL(request.url, `http://${host || "localhost"}`)
      const given = url.searchParams.get("token")
      if (url.pathname === "/" && given !== null && same(given, tokenDigest)) {
        return HttpServerResponse.redirect("/", { status: 303 }).pipe(
          HttpServerResponse.unsafeSetCookie(page.cookie, session, { httpOnly: true, sameSite: "strict", path: "/" })
        )
      }
      const cookie = request.cookies[page.cookie]
      if (cookie === undefined || !same(cookie, sessionDigest)) return refuseUnauthorized(unauthorizedMessage)
    }
    if (!SAFE_METHODS.has(request.method) && !byBearer) {
      const origin = request.headers.origin
      if (origin === undefined || origin !== `http://${host}`) {
        return forbidden(`refused: a state-changing request from ${origin ?? "no origin"}, not from this page (http://${host})`)
      }
    }
    return undefined
  }
}

/**
 * The one gate in front of every route of both front-ends (`baton serve`'s API, /openapi.json, /docs;
 * `baton web`'s API, page and event streams): refuses everything while the server drains, checks the
 * bearer token (or, for a page, its cookie, Host and Origin), refuses a body over the limit (413, before
 * it is read when its length is declared, else as soon as it outgrows the limit), and turns undecodable
 * requests into invalid_input and an unknown path into the JSON not_found.
 */
export const gate = (options: GateOptions) => {
  const bearer = options.token === undefined ? undefined : bearerCheck(options.token)
  const publicPaths = options.publicPaths ?? new Set<string>()
  const unauthorizedMessage = options.unauthorized ?? "missing or wrong bearer token"
  const page = options.page !== undefined ? pageCheck(options.page, options.token, unauthorizedMessage) : undefined
  const limit = options.maxBodyBytes
  /** The checks, in order, on the request's headers alone: a refusal, or undefined to go on. */
  const admit = (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => {
    const byBearer = bearer !== undefined && bearer(request.headers.authorization)
    if (page !== undefined) {
      const refused = page(request, byBearer)
      if (refused !== undefined) return refused
    } else if (bearer !== undefined && !byBearer && !publicPaths.has(request.url.split("?")[0] ?? "")) {
      return refuseUnauthorized(unauthorizedMessage)
    }
    if (Number(request.headers["content-length"] ?? 0) > limit) {
      // Read and dropped, never kept: the client gets the answer instead of a reset mid-upload.
      NodeHttpServerRequest.toIncomingMessage(request).resume()
      return payloadTooLarge(limit)
    }
    return undefined
  }
  return (app: HttpApp.Default) => {
    // Built once: a request pays for the checks and the wrappers it needs, not for composing them.
    const mapErrors = (handled: HttpApp.Default) => Effect.catchAllCause(handled, (cause) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (exceededLimit(cause)) {
          NodeHttpServerRequest.toIncomingMessage(request).resume()
          return Effect.succeed(payloadTooLarge(limit))
        }
        return Option.match(noRoute(cause, request), {
          onSome: Effect.succeed,
          onNone: () => Option.match(toInvalidInput(cause), { onNone: () => Effect.failCause(cause), onSome: Effect.fail })
        })
      }))
    const declared = mapErrors(app)
    const capped = mapErrors(HttpServerRequest.withMaxBodySize(app, Option.some(limit)))
    const checked = Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, InvalidInput, HttpServerRequest.HttpServerRequest>((fiber) => {
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
      const refused = admit(request)
      if (refused !== undefined) return Effect.succeed(refused)
      // Only a chunked body can outgrow the limit while it is read: a declared length was checked above,
      // and Node reads no more than it. Providing the cap costs a request ~16 steps, so only those pay
      // it, and a body declared longer than the platform's own default cap (a larger limit overrides it).
      const length = Number(request.headers["content-length"] ?? 0)
      return request.headers["transfer-encoding"] === undefined && length <= SERVER_DEFAULT_MAX_BODY_BYTES ? declared : capped
    })
    const draining = options.draining
    return draining === undefined ? checked : Effect.flatMap(Ref.get(draining), (closing) => closing ? Effect.succeed(shuttingDown) : checked)
  }
}

/** `baton serve`'s gate: the bearer token on everything but /healthz. */
export const gateLayer = (options: {
  readonly token: Redacted.Redacted<string> | undefined
  readonly draining: Ref.Ref<boolean>
  readonly maxBodyBytes: number
}) => HttpApiBuilder.middleware(BatonApi, gate({ ...options, publicPaths: PUBLIC_PATHS }))

import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Cause, Effect, Option, Redacted, Ref, Schema } from "effect"
import * as Crypto from "node:crypto"
import { InvalidInput, StreamBroken, Unauthorized } from "../../domain/Errors.js"
import { BatonApi } from "../../services/backend/HttpApi.js"
import { PayloadTooLargeJson, UnauthorizedJson, UnavailableJson } from "../../services/backend/HttpErrors.js"

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

const unauthorized = HttpServerResponse.unsafeJson(
  Schema.encodeSync(UnauthorizedJson)(new Unauthorized({ message: "missing or wrong bearer token" })),
  { status: 401, headers: { "www-authenticate": "Bearer" } }
)

const shuttingDown = HttpServerResponse.unsafeJson(
  Schema.encodeSync(UnavailableJson)(new StreamBroken({ message: "the server is shutting down" })),
  { status: 503, headers: { connection: "close" } }
)

/** The default limit of a request body: far above any run's input, far below what could exhaust memory. */
export const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

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

/**
 * The gate in front of every route (API, /openapi.json, /docs): refuses everything while the server
 * drains, checks the bearer token except on /healthz, refuses a body over the limit (413, before it is
 * read when its length is declared, else as soon as it outgrows the limit), and turns undecodable
 * requests into invalid_input and an unknown path into the JSON not_found.
 */
export const gateLayer = (options: {
  readonly token: Redacted.Redacted<string> | undefined
  readonly draining: Ref.Ref<boolean>
  readonly maxBodyBytes: number
}) => {
  const authorized = options.token === undefined ? () => true : bearerCheck(options.token)
  const limit = options.maxBodyBytes
  return HttpApiBuilder.middleware(BatonApi, (app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (yield* Ref.get(options.draining)) return shuttingDown
      const path = request.url.split("?")[0] ?? ""
      if (!PUBLIC_PATHS.has(path) && !authorized(request.headers.authorization)) return unauthorized
      if (Number(request.headers["content-length"] ?? 0) > limit) {
        // Read and dropped, never kept: the client gets the answer instead of a reset mid-upload.
        NodeHttpServerRequest.toIncomingMessage(request).resume()
        return payloadTooLarge(limit)
      }
      return yield* app.pipe(
        HttpServerRequest.withMaxBodySize(Option.some(limit)),
        Effect.catchAllCause((cause) =>
          exceededLimit(cause)
            ? Effect.sync(() => {
              NodeHttpServerRequest.toIncomingMessage(request).resume()
              return payloadTooLarge(limit)
            })
            : Option.match(noRoute(cause, request), {
              onSome: Effect.succeed,
              onNone: () => Option.match(toInvalidInput(cause), { onNone: () => Effect.failCause(cause), onSome: Effect.fail })
            }))
      )
    }))
}

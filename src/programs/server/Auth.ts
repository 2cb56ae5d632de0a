import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Option, Redacted, Ref, Schema } from "effect"
import * as Crypto from "node:crypto"
import { InvalidInput, StreamBroken, Unauthorized } from "../../domain/Errors.js"
import { BatonApi } from "../../services/backend/HttpApi.js"
import { UnauthorizedJson, UnavailableJson } from "../../services/backend/HttpErrors.js"

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
 * drains, checks the bearer token except on /healthz, and turns undecodable requests into invalid_input.
 */
export const gateLayer = (options: { readonly token: Redacted.Redacted<string> | undefined; readonly draining: Ref.Ref<boolean> }) => {
  const authorized = options.token === undefined ? () => true : bearerCheck(options.token)
  return HttpApiBuilder.middleware(BatonApi, (app) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (yield* Ref.get(options.draining)) return shuttingDown
      const path = request.url.split("?")[0] ?? ""
      if (!PUBLIC_PATHS.has(path) && !authorized(request.headers.authorization)) return unauthorized
      return yield* app.pipe(
        Effect.catchAllCause((cause) => Option.match(toInvalidInput(cause), { onNone: () => Effect.failCause(cause), onSome: Effect.fail }))
      )
    }))
}

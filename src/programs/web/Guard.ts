import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Redacted, Schema } from "effect"
import * as Crypto from "node:crypto"
import { Unauthorized } from "../../domain/Errors.js"
import { ForbiddenJson, UnauthorizedJson } from "../../services/backend/HttpErrors.js"
import { bearerCheck, isLoopbackHost } from "../server/Auth.js"

export const COOKIE = "baton_web"

export interface GuardOptions {
  /** The address bound (`--host`). */
  readonly host: string
  /** The port bound, read once the listener has one. */
  readonly port: () => number
  readonly token: Redacted.Redacted<string> | undefined
}

/** A refusal in `baton serve`'s error form: 401 `unauthorized` (no token) or 403 `forbidden` (Host, Origin). */
const refuse = (status: 401 | 403, message: string) =>
  HttpServerResponse.unsafeJson(
    status === 401 ? Schema.encodeSync(UnauthorizedJson)(new Unauthorized({ message })) : Schema.encodeSync(ForbiddenJson)({ code: "forbidden", message }),
    { status }
  )

const sameDigest = (a: string, b: string) =>
  Crypto.timingSafeEqual(Crypto.createHash("sha256").update(a).digest(), Crypto.createHash("sha256").update(b).digest())

const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD"])

/**
 * The checks in front of every request of `baton web`, a page that can run shell commands:
 * - Host: on a loopback bind, only the loopback names with our port, so a DNS-rebinding page (its own
 *   name resolving to 127.0.0.1) is refused; with a token the cookie plays that part.
 * - Origin: every state-changing request must come from the served origin (a cross-site form or fetch
 *   from another page is refused; a non-browser client sends Origin, or the bearer token).
 * - Token: with one, every request needs the cookie set from the one-time URL (`/?token=…`, then a
 *   redirect that drops it from the address bar), or `Authorization: Bearer`. The cookie is HttpOnly,
 *   a random value of this process: the page itself never holds a secret.
 * Returns the refusal (or the cookie-setting redirect), or undefined to go on.
 */
export const makeGuard = (options: GuardOptions) => {
  const cookieValue = Crypto.randomBytes(32).toString("hex")
  const bearer = options.token !== undefined ? bearerCheck(options.token) : undefined
  const loopback = isLoopbackHost(options.host)
  const allowedHosts = () => {
    const port = options.port()
    const bound = options.host.includes(":") ? `[${options.host}]` : options.host
    return new Set([`${bound}:${port}`, `localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`].map((h) => h.toLowerCase()))
  }
  return (request: HttpServerRequest.HttpServerRequest): HttpServerResponse.HttpServerResponse | undefined => {
    const host = (request.headers.host ?? "").toLowerCase()
    if (loopback && !allowedHosts().has(host)) {
      return refuse(403, `refused: Host "${host}" is not this server (a loopback page answers only to its own address)`)
    }
    const url = new URL(request.url, `http://${host || "localhost"}`)
    const byBearer = bearer !== undefined && bearer(request.headers.authorization)
    if (options.token !== undefined && !byBearer) {
      const given = url.searchParams.get("token")
      if (url.pathname === "/" && given !== null && sameDigest(given, Redacted.value(options.token))) {
        return HttpServerResponse.redirect("/", { status: 303 }).pipe(
          HttpServerResponse.unsafeSetCookie(COOKIE, cookieValue, { httpOnly: true, sameSite: "strict", path: "/" })
        )
      }
      const cookie = request.cookies[COOKIE]
      if (cookie === undefined || !sameDigest(cookie, cookieValue)) {
        return refuse(401, "this page needs the token: open the URL `baton web` printed (…/?token=…)")
      }
    }
    if (!SAFE_METHODS.has(request.method) && !byBearer) {
      const origin = request.headers.origin
      if (origin === undefined || origin !== `http://${host}`) {
        return refuse(403, `refused: a state-changing request from ${origin ?? "no origin"}, not from this page (http://${host})`)
      }
    }
    return undefined
  }
}

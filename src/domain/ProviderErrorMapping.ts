import { Either, Schema } from "effect"
import {
  ProviderAuth,
  ProviderError as ProviderErrorSchema,
  ProviderContextOverflow,
  ProviderRequestTooLarge,
  type ProviderError,
  ProviderInvalidRequest,
  ProviderMalformed,
  ProviderOverloaded,
  ProviderQuotaExceeded,
  ProviderRateLimited,
  ProviderServerError,
  ProviderTransientQuota
} from "./ProviderError.js"

/**
 * How a failed model request (an HTTP status with its body, or an error event inside a 200 stream)
 * becomes a ProviderError. Pure: the caller passes the clock reading for HTTP-date retry-after values.
 * The tag decides the recovery (Recovery.ts), so the order of the checks below is the policy.
 */

/** The error object providers put in bodies and stream events (OpenAI, Anthropic, Groq, Google-style). */
export const ErrorObject = Schema.Struct({
  type: Schema.optional(Schema.NullOr(Schema.String)),
  code: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
  message: Schema.optional(Schema.NullOr(Schema.String)),
  status: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Number))),
  status_code: Schema.optional(Schema.NullOr(Schema.Number))
})
export type ErrorObject = typeof ErrorObject.Type

const Envelope = Schema.Struct({ error: ErrorObject })
const decodeEnvelope = Schema.decodeUnknownEither(Envelope)
const decodeObject = Schema.decodeUnknownEither(ErrorObject)

/** The error object of a body: `{"error":{…}}`, `{"type":"error","error":{…}}`, `[{"error":{…}}]` or a bare object. */
export const errorObjectOf = (body: unknown): ErrorObject | undefined => {
  const candidate = Array.isArray(body) ? body[0] : body
  const wrapped = decodeEnvelope(candidate)
  if (Either.isRight(wrapped)) return wrapped.right.error
  const bare = decodeObject(candidate)
  return Either.isRight(bare) && (bare.right.message != null || bare.right.type != null || bare.right.code != null)
    ? bare.right
    : undefined
}

export const parseJsonBody = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Milliseconds to wait from `retry-after-ms` (preferred, as the OpenAI SDKs do) or `retry-after`
 * (delta-seconds, possibly fractional, or an HTTP date relative to `nowMs`).
 */
export const retryAfterMs = (
  header: (name: string) => string | undefined,
  nowMs: number
): number | undefined => {
  const ms = header("retry-after-ms")
  if (ms !== undefined && ms.trim() !== "") {
    const value = Number(ms)
    if (Number.isFinite(value) && value >= 0) return Math.round(value)
  }
  const raw = header("retry-after")?.trim()
  if (raw === undefined || raw === "") return undefined
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.round(Number(raw) * 1000)
  const date = Date.parse(raw)
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs)
}

/** Removes every secret and anything shaped like an API key (providers echo masked keys in 401 bodies). */
export const sanitize = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) {
    if (secret.length > 0) out = out.split(secret).join("[redacted]")
  }
  return out
    .replace(/\b(sk|pk|rk|gsk|xai)-[A-Za-z0-9_*\-]{4,}(\.[A-Za-z0-9_*\-]+)*/gi, "[redacted]")
    .replace(/Bearer\s+\S+/gi, "Bearer [redacted]")
}

const encodeError = Schema.encodeSync(ProviderErrorSchema)
const decodeError = Schema.decodeSync(ProviderErrorSchema)

/** The same error with its message sanitized (wire excerpts in messages may echo anything back). */
export const sanitizeError = (error: ProviderError, secrets: ReadonlyArray<string>): ProviderError => {
  const message = sanitize(error.message, secrets)
  return message === error.message ? error : decodeError({ ...encodeError(error), message })
}

const MAX_MESSAGE = 400

const lower = (value: string | number | null | undefined): string => (value == null ? "" : String(value).toLowerCase())

// Letta's NON_RETRYABLE_429_REASONS (exceeded-quota, not-enough-credits) and run error llm_insufficient_credits.
const billing =
  /insufficient_quota|exceeded your current quota|billing|credit balance is too low|payment required|insufficient[ _-]credits|exceeded-quota|not-enough-credits|out of credits/
// A transient subscription limit: retried on the reconnect ladder, whatever the status.
const userQuota = /insufficient_user_quota/
const overflow =
  /context_length_exceeded|context length|context window|maximum context|prompt is too long|too many tokens|input is too long|request_too_large|string_above_max_length|reduce the length of the messages/
const auth = /authentication_error|invalid_api_key|permission_error|invalid x-api-key|incorrect api key|unauthorized/
const overloaded = /overloaded/
const rateLimited = /rate_limit|rate limit|too many requests/
const transientQuota = /resource_exhausted|quota/
const server = /server_error|api_error|internal_error|internal server error|service_unavailable|bad gateway|timeout/

export interface FailureContext {
  /** Provider name for the message (`openai-chat`, `anthropic`, `openai-responses`). */
  readonly provider: string
  /** HTTP status; absent for an error event inside a 200 stream. */
  readonly status?: number | undefined
  readonly error?: ErrorObject | undefined
  readonly retryAfterMs?: number | undefined
  /** Raw body text, used when it carries no error object. */
  readonly bodyText?: string | undefined
  readonly secrets: ReadonlyArray<string>
}

const describe = (context: FailureContext): string => {
  const where = context.status === undefined ? "error event in stream" : `HTTP ${context.status}`
  const kinds = [context.error?.type, context.error?.code].filter((k) => k != null && k !== "")
  const kind = kinds.length > 0 ? kinds.join("/") : undefined
  const detail = context.error?.message ?? context.bodyText?.trim() ?? ""
  const text = `${context.provider}: ${where}${kind !== undefined ? ` (${kind})` : ""}${detail !== "" ? `: ${detail}` : ""}`
  const clean = sanitize(text, context.secrets)
  return clean.length > MAX_MESSAGE ? `${clean.slice(0, MAX_MESSAGE)}…` : clean
}

const retryAfter = (context: FailureContext) =>
  context.retryAfterMs === undefined ? {} : { retryAfterMs: context.retryAfterMs }

/**
 * The one classification of a provider failure. Mid-stream errors (no status) of an unknown kind are
 * server errors: the request was accepted, so the failure is the server's, and a retry may succeed.
 * Groq's `tool_use_failed` (the server rejected the model's own tool call) is ProviderMalformed{bad_json}:
 * the request was valid and a fresh sample usually succeeds, so it must be retried, not reported as the
 * caller's invalid request.
 */
export const classifyFailure = (context: FailureContext): ProviderError => {
  const status = context.status
  const e = context.error
  const kinds = `${lower(e?.type)} ${lower(e?.code)} ${lower(e?.status)}`
  const all = `${kinds} ${lower(e?.message)} ${e === undefined ? lower(context.bodyText?.slice(0, 2000)) : ""}`
  const message = describe(context)
  if (userQuota.test(all)) return new ProviderTransientQuota({ ...retryAfter(context), message })
  if (billing.test(all) || status === 402) return new ProviderQuotaExceeded({ message })
  if (status === 401 || status === 403 || auth.test(kinds) || (status === undefined && auth.test(all))) {
    return new ProviderAuth({ status: status === 403 ? 403 : status ?? 401, message })
  }
  if (status === 413 || /request_too_large/.test(kinds)) return new ProviderRequestTooLarge({ message })
  if ((status === undefined || status === 400) && overflow.test(all)) {
    return new ProviderContextOverflow({ message })
  }
  if (status === 529 || overloaded.test(kinds) || (status === 503 && overloaded.test(all))) {
    return new ProviderOverloaded({ ...retryAfter(context), message })
  }
  if (status === 429 || rateLimited.test(kinds)) {
    return transientQuota.test(all)
      ? new ProviderTransientQuota({ ...retryAfter(context), message })
      : new ProviderRateLimited({ ...retryAfter(context), message })
  }
  if (lower(e?.code) === "tool_use_failed") return new ProviderMalformed({ reason: "bad_json", message })
  if (status !== undefined && status >= 500) return new ProviderServerError({ status, message })
  // 408 and 409 are retried by both official SDKs: a timeout or a lock conflict on the provider's side.
  if (status === 408 || status === 409) return new ProviderServerError({ status, message })
  if (status === undefined) {
    if (lower(e?.type) === "invalid_request_error") {
      return new ProviderInvalidRequest({ status: e?.status_code ?? 400, message })
    }
    return new ProviderServerError({ status: e?.status_code ?? 500, message })
  }
  if (server.test(kinds)) return new ProviderServerError({ status, message })
  return new ProviderInvalidRequest({ status, message })
}

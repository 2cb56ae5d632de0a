import { assert, describe, it } from "@effect/vitest"
import { classifyFailure, errorObjectOf, retryAfterMs, sanitize } from "../../src/domain/ProviderErrorMapping.js"

const headers = (h: Record<string, string>) => (name: string) => h[name]
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0)

describe("retryAfterMs", () => {
  it("reads delta-seconds, fractional seconds, retry-after-ms (preferred) and HTTP dates", () => {
    assert.strictEqual(retryAfterMs(headers({ "retry-after": "4" }), NOW), 4000)
    assert.strictEqual(retryAfterMs(headers({ "retry-after": "1.5" }), NOW), 1500)
    assert.strictEqual(retryAfterMs(headers({ "retry-after-ms": "250", "retry-after": "4" }), NOW), 250)
    assert.strictEqual(retryAfterMs(headers({ "retry-after": "Thu, 01 Jan 2026 12:00:30 GMT" }), NOW), 30_000)
  })

  it("a past date is zero; garbage and absence are undefined", () => {
    assert.strictEqual(retryAfterMs(headers({ "retry-after": "Thu, 01 Jan 2026 11:00:00 GMT" }), NOW), 0)
    assert.isUndefined(retryAfterMs(headers({ "retry-after": "soon" }), NOW))
    assert.isUndefined(retryAfterMs(headers({ "retry-after-ms": "-5" }), NOW))
    assert.isUndefined(retryAfterMs(headers({}), NOW))
  })
})

describe("errorObjectOf", () => {
  it("finds the error object in every envelope providers use", () => {
    assert.strictEqual(errorObjectOf({ error: { type: "t", message: "m" } })?.type, "t")
    assert.strictEqual(errorObjectOf({ type: "error", error: { type: "overloaded_error" } })?.type, "overloaded_error")
    assert.strictEqual(errorObjectOf([{ error: { code: 429, status: "RESOURCE_EXHAUSTED" } }])?.status, "RESOURCE_EXHAUSTED")
    assert.strictEqual(errorObjectOf({ message: "bare" })?.message, "bare")
    assert.isUndefined(errorObjectOf("<html>"))
    assert.isUndefined(errorObjectOf({ unrelated: true }))
  })
})

describe("classifyFailure", () => {
  const base = { provider: "p", secrets: [] }
  it("mid-stream errors: unknown kinds are server errors, invalid_request_error stays invalid", () => {
    assert.strictEqual(classifyFailure({ ...base, error: { message: "boom" } })._tag, "ProviderServerError")
    assert.strictEqual(classifyFailure({ ...base, error: { type: "invalid_request_error", message: "bad" } })._tag, "ProviderInvalidRequest")
    assert.strictEqual(classifyFailure({ ...base, error: { type: "rate_limit_error" } })._tag, "ProviderRateLimited")
    assert.strictEqual(classifyFailure({ ...base, error: { type: "authentication_error" } })._tag, "ProviderAuth")
  })

  it("Anthropic's low-credit 400 is a permanent quota error, not an invalid request", () => {
    const e = classifyFailure({
      ...base,
      status: 400,
      error: { type: "invalid_request_error", message: "Your credit balance is too low to access the Anthropic API." }
    })
    assert.strictEqual(e._tag, "ProviderQuotaExceeded")
  })

  it("408 and 409 are retryable server-side conditions; other 4xx are invalid requests", () => {
    assert.strictEqual(classifyFailure({ ...base, status: 408 })._tag, "ProviderServerError")
    assert.strictEqual(classifyFailure({ ...base, status: 409 })._tag, "ProviderServerError")
    assert.strictEqual(classifyFailure({ ...base, status: 422 })._tag, "ProviderInvalidRequest")
    assert.strictEqual(classifyFailure({ ...base, status: 402 })._tag, "ProviderQuotaExceeded")
  })

  it("messages are bounded and never carry secrets or key-shaped strings", () => {
    const e = classifyFailure({
      provider: "p",
      status: 401,
      bodyText: `bad key sk-live-abcdef1234567890 and my-secret-value ${"x".repeat(1000)}`,
      secrets: ["my-secret-value"]
    })
    assert.notInclude(e.message, "sk-live")
    assert.notInclude(e.message, "my-secret-value")
    assert.isAtMost(e.message.length, 401)
  })
})

describe("sanitize", () => {
  it("removes the exact secret, bearer tokens and key-shaped tokens", () => {
    assert.strictEqual(sanitize("Authorization: Bearer abc.def", []), "Authorization: Bearer [redacted]")
    assert.strictEqual(sanitize("key=hunter2hunter2", ["hunter2hunter2"]), "key=[redacted]")
    assert.strictEqual(sanitize("Incorrect API key provided: sk-abc12****wxyz.", []), "Incorrect API key provided: [redacted].")
  })
})

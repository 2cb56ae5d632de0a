import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { ProviderError } from "../../src/domain/ProviderError.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { type Reply, Reply as R } from "../support/MockModelServer.js"
import type { Wire } from "../support/MockWire.js"
import { liveProvider, request, run, settings } from "../support/ProviderHarness.js"

const failWith = (wire: Wire, reply: Reply): Effect.Effect<ProviderError | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [reply] })
    const provider = yield* liveProvider(wire, settings(server.baseUrl(wire)))
    const { events, error } = yield* run(provider.stream(request()))
    assert.deepStrictEqual(events, [])
    return error
  })

/** The parts of an error that drive recovery. */
const shape = (e: ProviderError | undefined) =>
  e === undefined
    ? undefined
    : {
      _tag: e._tag,
      ...("status" in e ? { status: e.status } : {}),
      ...("retryAfterMs" in e && e.retryAfterMs !== undefined ? { retryAfterMs: e.retryAfterMs } : {})
    }

const cases: ReadonlyArray<readonly [Wire, string, ReturnType<typeof shape>]> = [
  ["openai-chat", "errors/openai/401-invalid-api-key", { _tag: "ProviderAuth", status: 401 }],
  ["openai-chat", "errors/openai/429-rate-limit-exceeded", { _tag: "ProviderRateLimited", retryAfterMs: 4000 }],
  ["openai-chat", "errors/openai/400-context-length-exceeded", { _tag: "ProviderContextOverflow" }],
  ["openai-responses", "errors/openai/401-invalid-api-key", { _tag: "ProviderAuth", status: 401 }],
  ["openai-responses", "errors/openai/429-rate-limit-exceeded", { _tag: "ProviderRateLimited", retryAfterMs: 4000 }],
  ["openai-responses", "errors/openai/400-context-length-exceeded", { _tag: "ProviderContextOverflow" }],
  ["anthropic", "errors/anthropic/400-invalid-request-recorded", { _tag: "ProviderInvalidRequest", status: 400 }],
  ["anthropic", "errors/anthropic/400-prompt-too-long", { _tag: "ProviderContextOverflow" }],
  ["anthropic", "errors/anthropic/401-authentication-error", { _tag: "ProviderAuth", status: 401 }],
  ["anthropic", "errors/anthropic/429-rate-limit-error", { _tag: "ProviderRateLimited", retryAfterMs: 60000 }],
  ["anthropic", "errors/anthropic/529-overloaded-error", { _tag: "ProviderOverloaded" }]
]

describe("error fixtures: HTTP status, headers and body become the right tag", () => {
  for (const [wire, fixture, expected] of cases) {
    it.scopedLive(`${wire} ← ${fixture}`, () =>
      Effect.gen(function*() {
        const error = yield* failWith(wire, R.errorFixture(fixture))
        assert.deepStrictEqual(shape(error), expected)
      }))
  }

  it.scopedLive("the masked key an OpenAI 401 echoes never reaches the error message", () =>
    Effect.gen(function*() {
      const error = yield* failWith("openai-chat", R.errorFixture("errors/openai/401-invalid-api-key"))
      assert.include(error?.message, "Incorrect API key provided")
      assert.notInclude(error?.message, "sk-abc12")
      assert.notInclude(error?.message, "wxyz")
    }))
})

describe("statuses and headers beyond the fixtures", () => {
  const statusCases: ReadonlyArray<readonly [string, Reply, ReturnType<typeof shape>]> = [
    ["503 with retry-after 1", R.status(503, { headers: { "retry-after": "1" } }), { _tag: "ProviderServerError", status: 503 }],
    ["502 with an HTML body", R.status(502, { headers: { "content-type": "text/html" }, body: "<html>Bad Gateway</html>" }), {
      _tag: "ProviderServerError",
      status: 502
    }],
    ["429 with retry-after-ms (preferred over retry-after)", R.status(429, { headers: { "retry-after-ms": "1500", "retry-after": "9" } }), {
      _tag: "ProviderRateLimited",
      retryAfterMs: 1500
    }],
    ["429 insufficient_quota is permanent", R.status(429, {
      body: JSON.stringify({ error: { type: "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota" } })
    }), { _tag: "ProviderQuotaExceeded" }],
    ["429 RESOURCE_EXHAUSTED is a transient quota", R.status(429, {
      headers: { "retry-after": "2" },
      body: JSON.stringify([{ error: { code: 429, message: "Resource has been exhausted (e.g. check quota).", status: "RESOURCE_EXHAUSTED" } }])
    }), { _tag: "ProviderTransientQuota", retryAfterMs: 2000 }],
    // Letta's NON_RETRYABLE_429_REASONS: a 429 is not always worth waiting for.
    ["429 with reason exceeded-quota fails at once", R.status(429, {
      body: JSON.stringify({ error: { type: "rate_limit", reason: "exceeded-quota", message: "rate limited: exceeded-quota" } })
    }), { _tag: "ProviderQuotaExceeded" }],
    ["429 with reason not-enough-credits fails at once", R.status(429, {
      body: JSON.stringify({ error: { code: "not-enough-credits", message: "Not enough credits" } })
    }), { _tag: "ProviderQuotaExceeded" }],
    ["a billing message fails at once", R.status(400, {
      body: JSON.stringify({ error: { type: "invalid_request_error", message: "Your credit balance is too low to access the API" } })
    }), { _tag: "ProviderQuotaExceeded" }],
    // The context-engine seed's transient subscription limit: the reconnect ladder, even on a 403, and not auth.
    ["insufficient_user_quota is a transient quota, not auth", R.status(403, {
      body: JSON.stringify({ error: { type: "insufficient_user_quota", message: "subscription limit reached, try again shortly" } })
    }), { _tag: "ProviderTransientQuota" }],
    ["403 is auth", R.status(403), { _tag: "ProviderAuth", status: 403 }],
    ["404 (unknown model) is an invalid request", R.status(404), { _tag: "ProviderInvalidRequest", status: 404 }],
    ["413 is a request too large (its images go first)", R.status(413), { _tag: "ProviderRequestTooLarge" }],
    ["503 overloaded_error body is overloaded", R.status(503, {
      headers: { "retry-after": "3" },
      body: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
    }), { _tag: "ProviderOverloaded", retryAfterMs: 3000 }]
  ]
  for (const [name, reply, expected] of statusCases) {
    it.scopedLive(name, () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(shape(yield* failWith("openai-chat", reply)), expected)
      }))
  }
})

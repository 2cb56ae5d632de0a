import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import type { ConfigError } from "../../src/domain/Errors.js"
import { Provider } from "../../src/services/Provider.js"
import {
  layerFromOptions,
  type ProviderOptions,
  type ProviderSettings,
  resolveProviderSettings
} from "../../src/services/provider/Config.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { collapse, request, run, TEST_KEY } from "../support/ProviderHarness.js"

const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const resolve = (env: Record<string, string>, options: ProviderOptions = {}, defaults: ProviderOptions = {}) =>
  resolveProviderSettings(options, defaults).pipe(withEnv(env))

const failure = (env: Record<string, string>, options: ProviderOptions = {}) =>
  Effect.flip(resolve(env, options)).pipe(Effect.map((e: ConfigError) => ({ field: e.field, message: e.message })))

const live = (s: ProviderSettings) => {
  if (s.kind === "replay") throw new Error("expected a live provider")
  return s
}

describe("resolveProviderSettings", () => {
  it.effect("defaults: openai-chat at api.openai.com/v1, key from OPENAI_API_KEY, 300 s timeouts", () =>
    Effect.gen(function*() {
      const s = live(yield* resolve({ BATON_MODEL: "gpt-4.1-mini", OPENAI_API_KEY: TEST_KEY }))
      assert.strictEqual(s.kind, "openai-chat")
      assert.strictEqual(s.live.baseUrl, "https://api.openai.com/v1")
      assert.strictEqual(Option.map(s.live.apiKey, Redacted.value).pipe(Option.getOrUndefined), TEST_KEY)
      assert.deepStrictEqual(s.live.timeouts, { firstByteMs: 300_000, stallMs: 300_000 })
      assert.notInclude(String(s.live.apiKey), TEST_KEY)
    }))

  it.effect("a missing model names BATON_MODEL", () =>
    Effect.gen(function*() {
      const e = yield* failure({ OPENAI_API_KEY: TEST_KEY })
      assert.strictEqual(e.field, "BATON_MODEL")
      assert.include(e.message, "BATON_MODEL")
    }))

  it.effect("a missing key names both variables to set", () =>
    Effect.gen(function*() {
      const openai = yield* failure({ BATON_MODEL: "m" })
      assert.strictEqual(openai.field, "BATON_API_KEY")
      assert.include(openai.message, "OPENAI_API_KEY")
      const anthropic = yield* failure({ BATON_MODEL: "m", BATON_PROVIDER: "anthropic", OPENAI_API_KEY: "x" })
      assert.include(anthropic.message, "BATON_API_KEY")
      assert.include(anthropic.message, "ANTHROPIC_API_KEY")
    }))

  it.effect("a local OpenAI-compatible server needs no key", () =>
    Effect.gen(function*() {
      const s = live(yield* resolve({ BATON_MODEL: "qwen3:8b", BATON_BASE_URL: "http://127.0.0.1:11434/v1/" }))
      assert.strictEqual(s.live.baseUrl, "http://127.0.0.1:11434/v1")
      assert.isTrue(Option.isNone(s.live.apiKey))
    }))

  it.effect("BATON_API_KEY wins over the vendor's variable; anthropic falls back to ANTHROPIC_API_KEY", () =>
    Effect.gen(function*() {
      const both = live(yield* resolve({ BATON_PROVIDER: "anthropic", BATON_MODEL: "c", BATON_API_KEY: "baton", ANTHROPIC_API_KEY: "anth" }))
      assert.strictEqual(Option.getOrUndefined(Option.map(both.live.apiKey, Redacted.value)), "baton")
      const fallback = live(yield* resolve({ BATON_PROVIDER: "anthropic", BATON_MODEL: "c", ANTHROPIC_API_KEY: "anth", OPENAI_API_KEY: "oa" }))
      assert.strictEqual(Option.getOrUndefined(Option.map(fallback.live.apiKey, Redacted.value)), "anth")
      assert.strictEqual(fallback.live.baseUrl, "https://api.anthropic.com")
    }))

  it.effect("a vendor's key never goes to another host; BATON_API_KEY does", () =>
    Effect.gen(function*() {
      const proxy = { BATON_MODEL: "m", BATON_BASE_URL: "https://proxy.example.com/v1", OPENAI_API_KEY: TEST_KEY }
      const chat = live(yield* resolve(proxy))
      assert.isTrue(Option.isNone(chat.live.apiKey))
      const responses = yield* failure({ ...proxy, BATON_PROVIDER: "openai-responses" })
      assert.strictEqual(responses.field, "BATON_API_KEY")
      assert.include(responses.message, "OPENAI_API_KEY is only sent to openai.com")
      const explicit = live(yield* resolve({ ...proxy, BATON_API_KEY: "for-the-proxy" }))
      assert.strictEqual(Option.getOrUndefined(Option.map(explicit.live.apiKey, Redacted.value)), "for-the-proxy")
    }))

  it.effect("options beat the environment, which beats defaults", () =>
    Effect.gen(function*() {
      const env = { BATON_MODEL: "env-model", BATON_BASE_URL: "http://env:1/v1", BATON_STALL_TIMEOUT_MS: "2000", BATON_API_KEY: "k" }
      const s = live(yield* resolve(env, { model: "cli-model" }, { model: "file-model", baseUrl: "http://file:1/v1", provider: "openai-responses", firstByteTimeoutMs: 1234 }))
      assert.strictEqual(s.kind, "openai-responses")
      assert.strictEqual(s.live.model, "cli-model")
      assert.strictEqual(s.live.baseUrl, "http://env:1/v1")
      assert.deepStrictEqual(s.live.timeouts, { firstByteMs: 1234, stallMs: 2000 })
    }))

  it.effect("bad values name their variable", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* failure({ BATON_PROVIDER: "gemini" })).field, "BATON_PROVIDER")
      assert.strictEqual((yield* failure({ BATON_MODEL: "m", BATON_BASE_URL: "ftp://x" })).field, "BATON_BASE_URL")
      const timeout = yield* failure({ BATON_MODEL: "m", BATON_BASE_URL: "http://h/v1", BATON_FIRST_BYTE_TIMEOUT_MS: "soon" })
      assert.strictEqual(timeout.field, "BATON_FIRST_BYTE_TIMEOUT_MS")
      assert.strictEqual((yield* failure({ BATON_PROVIDER: "replay" })).field, "BATON_CASSETTE")
    }))

  it.effect("no message ever contains the key", () =>
    Effect.gen(function*() {
      const e = yield* failure({ BATON_API_KEY: TEST_KEY, BATON_BASE_URL: "not a url", BATON_MODEL: "m" })
      assert.notInclude(e.message, TEST_KEY)
    }))
})

describe("layerFromOptions", () => {
  it.scopedLive("builds a working live provider from CLI-style options over the environment", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make({ replies: [Reply.text("hello from the mock")] })
      const layer = layerFromOptions({ provider: "openai-chat", model: "cli-model", baseUrl: server.baseUrl("openai-chat") })
      const { events, error } = yield* Effect.flatMap(Provider, (p) => run(p.stream(request()))).pipe(
        Effect.provide(layer),
        withEnv({ BATON_API_KEY: TEST_KEY })
      )
      assert.isUndefined(error)
      assert.deepStrictEqual(collapse(events)[0], { _tag: "TextDelta", text: "hello from the mock" })
      const [sent] = yield* server.requests
      assert.strictEqual(sent?.headers.authorization, `Bearer ${TEST_KEY}`)
      assert.strictEqual(sent?.json && typeof sent.json === "object" && "model" in sent.json ? sent.json.model : "", "cli-model")
    }))

  it.effect("fails to build with the ConfigError", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.provide(Provider, layerFromOptions({ provider: "anthropic" })).pipe(withEnv({})))
      assert.strictEqual(error._tag, "ConfigError")
    }))
})

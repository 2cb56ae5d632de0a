import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { ConfigError } from "../../domain/Errors.js"
import type { ProviderKind } from "../../domain/Settings.js"
import { Provider, type ProviderInfo } from "../Provider.js"
import * as ProviderAnthropic from "./Anthropic.js"
import * as ProviderCassette from "./Cassette.js"
import { makeCredentials, runHelper } from "./Credentials.js"
import { DEFAULT_FIRST_BYTE_TIMEOUT_MS, DEFAULT_STALL_TIMEOUT_MS, type LiveSettings } from "./Http.js"
import * as ProviderOpenAiChat from "./OpenAiChat.js"
import * as ProviderOpenAiResponses from "./OpenAiResponses.js"

/**
 * services/provider/ holds the Provider adapters: the live wire formats (OpenAiChat, Anthropic,
 * OpenAiResponses, each a Request encoder and a Decoder over Http and WireDecoder), the scripted and
 * cassette doubles, and this module, which picks one from the settings.
 */

/**
 * Which Provider to run, from explicit options (CLI flags), the environment and defaults (settings
 * files), in that order of precedence. API keys come from options or the environment only and stay
 * Redacted; no message here ever contains one.
 *
 * Environment: BATON_PROVIDER (openai-chat | anthropic | openai-responses | replay), BATON_MODEL,
 * BATON_BASE_URL, BATON_API_KEY (falling back to OPENAI_API_KEY or ANTHROPIC_API_KEY, by provider,
 * for that vendor's own hosts only),
 * BATON_FIRST_BYTE_TIMEOUT_MS, BATON_STALL_TIMEOUT_MS, BATON_CASSETTE (replay), BATON_RECORD_CASSETTE.
 */

export interface ProviderOptions {
  readonly provider?: ProviderKind | undefined
  readonly model?: string | undefined
  readonly baseUrl?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly firstByteTimeoutMs?: number | undefined
  readonly stallTimeoutMs?: number | undefined
  /** `replay`: the cassette to serve. */
  readonly cassette?: string | undefined
  /** Live providers: also record every call to this cassette. */
  readonly recordTo?: string | undefined
  /** A shell command whose stdout is the key (settings `apiKeyHelper`), run in `helperCwd`. */
  readonly apiKeyHelper?: string | undefined
  readonly helperCwd?: string | undefined
}

export type LiveKind = Exclude<ProviderKind, "replay">

export type ProviderSettings =
  | { readonly kind: LiveKind; readonly live: LiveSettings; readonly recordTo: Option.Option<string> }
  | { readonly kind: "replay"; readonly cassette: string }

export const DEFAULT_BASE_URL: Record<LiveKind, string> = {
  "openai-chat": "https://api.openai.com/v1",
  "anthropic": "https://api.anthropic.com",
  "openai-responses": "https://api.openai.com/v1"
}

const KINDS: ReadonlyArray<ProviderKind> = ["openai-chat", "anthropic", "openai-responses", "replay"]

const SOURCE = "provider configuration"

const fail = (field: string, message: string) => new ConfigError({ source: SOURCE, field, message })

const env = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Effect.map(Option.filter((value) => value.trim() !== "")),
    Effect.mapError(() => fail(name, `${name} cannot be read`))
  )

const envKey = (name: string) =>
  Config.option(Config.redacted(name)).pipe(
    Effect.map(Option.filter((value) => Redacted.value(value).trim() !== "")),
    Effect.mapError(() => fail(name, `${name} cannot be read`))
  )

const pick = <A>(option: A | undefined, fromEnv: Option.Option<A>, fallback: A | undefined): A | undefined =>
  option ?? Option.getOrUndefined(fromEnv) ?? fallback

const positiveMs = (field: string, value: string | number | undefined, fallback: number) => {
  if (value === undefined) return Effect.succeed(fallback)
  const n = typeof value === "number" ? value : Number(value)
  return Number.isInteger(n) && n > 0 ? Effect.succeed(n) : Effect.fail(fail(field, `${field} must be a positive integer (milliseconds), got "${value}"`))
}

/**
 * A vendor's own variable is only ever sent to that vendor: a base URL from a workspace settings file
 * must not be able to collect the user's OPENAI_API_KEY. Other hosts get BATON_API_KEY or nothing.
 */
const VENDOR: Record<LiveKind, { readonly variable: string; readonly host: RegExp; readonly domain: string }> = {
  "openai-chat": { variable: "OPENAI_API_KEY", host: /(^|\.)openai\.com$/, domain: "openai.com" },
  "openai-responses": { variable: "OPENAI_API_KEY", host: /(^|\.)openai\.com$/, domain: "openai.com" },
  "anthropic": { variable: "ANTHROPIC_API_KEY", host: /(^|\.)anthropic\.com$/, domain: "anthropic.com" }
}

/** Local servers (Ollama, llama.cpp, vLLM…) take no key; the hosted API formats always need one. */
const needsKey = (kind: LiveKind, baseUrl: URL) => kind !== "openai-chat" || VENDOR[kind].host.test(baseUrl.hostname)

/** Resolves options > environment > defaults into settings, or a ConfigError naming what to set. */
export const resolveProviderSettings = (options: ProviderOptions = {}, defaults: ProviderOptions = {}) =>
  Effect.gen(function*() {
    const rawKind = pick<string>(options.provider, yield* env("BATON_PROVIDER"), defaults.provider) ?? "openai-chat"
    const kind = KINDS.find((k) => k === rawKind)
    if (kind === undefined) {
      return yield* fail("BATON_PROVIDER", `unknown provider "${rawKind}": expected one of ${KINDS.join(", ")}`)
    }
    if (kind === "replay") {
      const cassette = pick(options.cassette, yield* env("BATON_CASSETTE"), defaults.cassette)
      if (cassette === undefined) {
        return yield* fail("BATON_CASSETTE", "the replay provider needs a cassette: set BATON_CASSETTE to a .jsonl file")
      }
      return { kind, cassette } satisfies ProviderSettings
    }
    const model = pick(options.model, yield* env("BATON_MODEL"), defaults.model)
    if (model === undefined) {
      return yield* fail("BATON_MODEL", `no model configured for ${kind}: set BATON_MODEL (or pass --model)`)
    }
    const rawUrl = pick(options.baseUrl, yield* env("BATON_BASE_URL"), defaults.baseUrl) ?? DEFAULT_BASE_URL[kind]
    const url = URL.canParse(rawUrl) ? new URL(rawUrl) : undefined
    if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
      return yield* fail("BATON_BASE_URL", `base URL "${rawUrl}" is not an http(s) URL`)
    }
    const vendor = VENDOR[kind]
    const ownHost = vendor.host.test(url.hostname)
    const batonKey = yield* envKey("BATON_API_KEY")
    const vendorKey = ownHost ? yield* envKey(vendor.variable) : Option.none()
    const helperCommand = options.apiKeyHelper ?? defaults.apiKeyHelper
    const helper = helperCommand !== undefined && options.apiKey === undefined
      ? { command: helperCommand, cwd: options.helperCwd ?? defaults.helperCwd ?? process.cwd() }
      : undefined
    const helperKey = helper !== undefined ? Option.some(yield* runHelper(helper.command, helper.cwd)) : Option.none()
    const apiKey = Option.orElse(
      Option.fromNullable(options.apiKey),
      () => Option.orElse(helperKey, () => Option.orElse(batonKey, () => vendorKey))
    )
    const source = helper !== undefined
      ? `the apiKeyHelper \`${helper.command}\``
      : Option.isSome(batonKey) || Option.isNone(vendorKey) ? "BATON_API_KEY" : vendor.variable
    if (Option.isNone(apiKey) && needsKey(kind, url)) {
      const how = ownHost
        ? `set BATON_API_KEY or ${vendor.variable}`
        : `set BATON_API_KEY (${vendor.variable} is only sent to ${vendor.domain})`
      return yield* fail("BATON_API_KEY", `no API key for ${kind} at ${url.origin}: ${how}`)
    }
    const firstByteMs = yield* positiveMs(
      "BATON_FIRST_BYTE_TIMEOUT_MS",
      options.firstByteTimeoutMs ?? Option.getOrUndefined(yield* env("BATON_FIRST_BYTE_TIMEOUT_MS")) ?? defaults.firstByteTimeoutMs,
      DEFAULT_FIRST_BYTE_TIMEOUT_MS
    )
    const stallMs = yield* positiveMs(
      "BATON_STALL_TIMEOUT_MS",
      options.stallTimeoutMs ?? Option.getOrUndefined(yield* env("BATON_STALL_TIMEOUT_MS")) ?? defaults.stallTimeoutMs,
      DEFAULT_STALL_TIMEOUT_MS
    )
    const live: LiveSettings = {
      model,
      baseUrl: rawUrl.replace(/\/+$/, ""),
      apiKey,
      timeouts: { firstByteMs, stallMs },
      credentials: yield* makeCredentials({ initial: apiKey, source, ...(helper !== undefined ? { helper } : {}) })
    }
    const recordTo = Option.fromNullable(pick(options.recordTo, yield* env("BATON_RECORD_CASSETTE"), defaults.recordTo))
    return { kind, live, recordTo } satisfies ProviderSettings
  })

const liveLayer = (kind: LiveKind, live: LiveSettings) =>
  (kind === "openai-chat"
    ? ProviderOpenAiChat.layer(live)
    : kind === "anthropic"
    ? ProviderAnthropic.layer(live)
    : ProviderOpenAiResponses.layer(live)).pipe(Layer.provide(FetchHttpClient.layer))

/** `gen_ai.provider.name`: the API a kind speaks (an OpenAI-compatible server is named for the API). */
const PROVIDER_NAME: Record<ProviderKind, string> = {
  "openai-chat": "openai",
  "openai-responses": "openai",
  "anthropic": "anthropic",
  "replay": "baton.replay"
}

/** The same Provider, saying who it is. */
const describing = (info: ProviderInfo) => (layer: Layer.Layer<Provider, ConfigError>): Layer.Layer<Provider, ConfigError> =>
  Layer.map(layer, (context) => Context.add(context, Provider, { ...Context.get(context, Provider), info }))

/** The Provider for resolved settings, with its HTTP client and file system included. */
export const layerFromSettings = (settings: ProviderSettings): Layer.Layer<Provider, ConfigError> => {
  if (settings.kind === "replay") {
    return ProviderCassette.layerReplay(settings.cassette).pipe(Layer.provide(NodeFileSystem.layer), describing({ name: PROVIDER_NAME.replay }))
  }
  const live = liveLayer(settings.kind, settings.live)
  return Option.match(settings.recordTo, {
    onNone: () => live,
    onSome: (path) => ProviderCassette.layerRecord(path).pipe(Layer.provide([live, NodeFileSystem.layer]))
  }).pipe(describing({ name: PROVIDER_NAME[settings.kind], model: settings.live.model }))
}

/** The Provider for explicit options (CLI flags) over the environment over defaults (settings files). */
export const layerFromOptions = (options: ProviderOptions = {}, defaults: ProviderOptions = {}): Layer.Layer<Provider, ConfigError> =>
  Layer.unwrapEffect(Effect.map(resolveProviderSettings(options, defaults), layerFromSettings))

/** The Provider from the environment alone. */
export const layerConfig: Layer.Layer<Provider, ConfigError> = layerFromOptions()

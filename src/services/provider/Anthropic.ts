import type * as HttpClient from "@effect/platform/HttpClient"
import { Layer, Option, Redacted } from "effect"
import { Provider } from "../Provider.js"
import { makeAnthropicDecoder } from "./AnthropicDecoder.js"
import { encodeAnthropicRequest, PROVIDER } from "./AnthropicRequest.js"
import { type LiveSettings, makeLive } from "./Http.js"

export const ANTHROPIC_VERSION = "2023-06-01"

/** Provider over Anthropic Messages: `POST {baseUrl}/v1/messages` (`baseUrl` like `https://api.anthropic.com`). */
export const make = (settings: LiveSettings) =>
  makeLive({
    provider: PROVIDER,
    path: "/v1/messages",
    headers: (apiKey) => ({
      "anthropic-version": ANTHROPIC_VERSION,
      ...Option.match(apiKey, { onNone: () => ({}), onSome: (key) => ({ "x-api-key": Redacted.value(key) }) })
    }),
    encode: encodeAnthropicRequest,
    decoder: (secrets) => makeAnthropicDecoder({ secrets })
  }, settings)

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

import * as HttpClient from "@effect/platform/HttpClient"
import { Layer, Effect, Option, Redacted, Stream } from "effect"
import { Provider } from "./Provider.js"
import { makeAnthropicDecoder } from "./ProviderAnthropicDecoder.js"
import { encodeAnthropicRequest, PROVIDER } from "./ProviderAnthropicRequest.js"
import { type LiveSettings, secretsOf, streamEvents } from "./ProviderHttp.js"

export const ANTHROPIC_VERSION = "2023-06-01"

/** Provider over Anthropic Messages: `POST {baseUrl}/v1/messages` (`baseUrl` like `https://api.anthropic.com`). */
export const make = (settings: LiveSettings) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const url = `${settings.baseUrl}/v1/messages`
    const secrets = secretsOf(settings.apiKey)
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "anthropic-version": ANTHROPIC_VERSION,
      ...Option.match(settings.apiKey, {
        onNone: () => ({}),
        onSome: (key) => ({ "x-api-key": Redacted.value(key) })
      })
    }
    return Provider.of({
      stream: (request) =>
        Stream.suspend(() =>
          streamEvents(client, {
            provider: PROVIDER,
            url,
            headers,
            body: encodeAnthropicRequest(request, settings),
            apiKey: settings.apiKey,
            timeouts: settings.timeouts
          }, makeAnthropicDecoder({ secrets }))
        )
    })
  })

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

import * as HttpClient from "@effect/platform/HttpClient"
import { Effect, Layer, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { Provider } from "./Provider.js"
import { bearer, type LiveSettings, secretsOf, streamEvents } from "./ProviderHttp.js"
import { encodeChatRequest, makeChatDecoder, PROVIDER } from "./ProviderOpenAiChatWire.js"

/**
 * Provider over OpenAI Chat Completions: `POST {baseUrl}/chat/completions` with `stream: true`.
 * `baseUrl` includes the version segment (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
 */
export const make = (settings: LiveSettings) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const url = `${settings.baseUrl}/chat/completions`
    const secrets = secretsOf(settings.apiKey)
    return Provider.of({
      stream: (request) =>
        Stream.suspend(() => {
          // Fallback ids for servers that send tool calls without one; unique per stream so pairs never collide.
          const idPrefix = `call_${randomUUID().slice(0, 8)}`
          return streamEvents(client, {
            provider: PROVIDER,
            url,
            headers: { "content-type": "application/json", ...bearer(settings.apiKey) },
            body: encodeChatRequest(request, settings),
            apiKey: settings.apiKey,
            timeouts: settings.timeouts
          }, makeChatDecoder({ secrets, idPrefix }))
        })
    })
  })

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

import * as HttpClient from "@effect/platform/HttpClient"
import { Effect, Layer, Stream } from "effect"
import { Provider } from "./Provider.js"
import { bearer, type LiveSettings, secretsOf, streamEvents } from "./ProviderHttp.js"
import { makeResponsesDecoder } from "./ProviderOpenAiResponsesDecoder.js"
import { encodeResponsesRequest, PROVIDER } from "./ProviderOpenAiResponsesRequest.js"

/** Provider over OpenAI Responses: `POST {baseUrl}/responses` (`baseUrl` like `https://api.openai.com/v1`). */
export const make = (settings: LiveSettings) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const url = `${settings.baseUrl}/responses`
    const secrets = secretsOf(settings.apiKey)
    return Provider.of({
      stream: (request) =>
        Stream.suspend(() =>
          streamEvents(client, {
            provider: PROVIDER,
            url,
            headers: { "content-type": "application/json", ...bearer(settings.apiKey) },
            body: encodeResponsesRequest(request, settings),
            apiKey: settings.apiKey,
            timeouts: settings.timeouts
          }, makeResponsesDecoder({ secrets }))
        )
    })
  })

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

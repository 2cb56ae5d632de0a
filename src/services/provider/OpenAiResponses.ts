import type * as HttpClient from "@effect/platform/HttpClient"
import { Layer } from "effect"
import { Provider } from "../Provider.js"
import { bearer, type LiveSettings, makeLive } from "./Http.js"
import { makeResponsesDecoder } from "./OpenAiResponsesDecoder.js"
import { encodeResponsesRequest, PROVIDER } from "./OpenAiResponsesRequest.js"

/** Provider over OpenAI Responses: `POST {baseUrl}/responses` (`baseUrl` like `https://api.openai.com/v1`). */
export const make = (settings: LiveSettings) =>
  makeLive({
    provider: PROVIDER,
    path: "/responses",
    headers: bearer,
    encode: encodeResponsesRequest,
    decoder: (secrets) => makeResponsesDecoder({ secrets })
  }, settings)

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

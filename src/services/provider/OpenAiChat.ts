import type * as HttpClient from "@effect/platform/HttpClient"
import { Layer } from "effect"
import { Provider } from "../Provider.js"
import { bearer, type LiveSettings, makeLive } from "./Http.js"
import { makeChatDecoder } from "./OpenAiChatDecoder.js"
import { encodeChatRequest, PROVIDER } from "./OpenAiChatRequest.js"

/**
 * Provider over OpenAI Chat Completions: `POST {baseUrl}/chat/completions` with `stream: true`.
 * `baseUrl` includes the version segment (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
 */
export const make = (settings: LiveSettings) =>
  makeLive({
    provider: PROVIDER,
    path: "/chat/completions",
    headers: bearer,
    encode: encodeChatRequest,
    decoder: (secrets) => makeChatDecoder({ secrets })
  }, settings)

export const layer = (settings: LiveSettings): Layer.Layer<Provider, never, HttpClient.HttpClient> =>
  Layer.effect(Provider, make(settings))

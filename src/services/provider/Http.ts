import * as Headers from "@effect/platform/Headers"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Clock, Effect, Option, Redacted, Stream } from "effect"
import type { ProviderError } from "../../domain/ProviderError.js"
import { ProviderConnectionLost, ProviderInvalidRequest } from "../../domain/ProviderError.js"
import { classifyFailure, errorObjectOf, parseJsonBody, retryAfterMs, sanitize, sanitizeError } from "../../domain/ProviderErrorMapping.js"
import type { ProviderEvent, ProviderRequest } from "../../domain/ProviderEvent.js"
import { Provider } from "../Provider.js"
import type { Credentials } from "./Credentials.js"
import { decodeBody, openWithTimeouts, type Timeouts, type WireDecoder } from "./WireDecoder.js"

/** What every live layer needs; built by ProviderConfig from options and the environment. */
export interface LiveSettings {
  readonly model: string
  /** Without a trailing slash. */
  readonly baseUrl: string
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly timeouts: Timeouts
  /** When given, the key is read from here on every request (it replaces `apiKey`), and told when refused. */
  readonly credentials?: Credentials
}

/**
 * Defaults, chosen for the slowest legitimate case rather than the typical one: a local server may
 * load a model before its first byte, and a reasoning model may stay silent for minutes (Chat
 * Completions sends nothing until reasoning ends; Responses without summaries goes quiet mid-stream).
 * 300 s is Codex CLI's stream idle timeout and also Node fetch's own headers/body timeout, so a larger
 * value could never take effect with the fetch client anyway.
 */
export const DEFAULT_FIRST_BYTE_TIMEOUT_MS = 300_000
export const DEFAULT_STALL_TIMEOUT_MS = 300_000

export interface HttpCall {
  readonly provider: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: unknown
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
  readonly timeouts: Timeouts
}

export const secretsOf = (apiKey: Option.Option<Redacted.Redacted<string>>): ReadonlyArray<string> =>
  Option.match(apiKey, { onNone: () => [], onSome: (key) => [Redacted.value(key)] })

const describeCause = (cause: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = cause
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    parts.push(current.message)
    current = current.cause
  }
  return parts.join(": ")
}

const transportError = (call: HttpCall) => (error: HttpClientError.HttpClientError): ProviderError => {
  const secrets = secretsOf(call.apiKey)
  if (error._tag === "RequestError" && error.reason !== "Transport") {
    return new ProviderInvalidRequest({
      status: 0,
      message: sanitize(`${call.provider}: cannot send request to ${call.url} (${error.reason})`, secrets)
    })
  }
  return new ProviderConnectionLost({
    message: sanitize(`${call.provider}: connection to ${call.url} failed: ${describeCause(error.cause)}`, secrets)
  })
}

/**
 * POSTs a JSON body and streams the answer's bytes. A non-2xx answer fails with the tag its
 * status, headers and body call for; a dropped connection is ProviderConnectionLost; both timeouts apply.
 */
const requestBytes = (client: HttpClient.HttpClient, call: HttpCall): Stream.Stream<Uint8Array, ProviderError> => {
  const secrets = secretsOf(call.apiKey)
  const request = HttpClientRequest.post(call.url).pipe(
    HttpClientRequest.setHeaders({ accept: "text/event-stream", ...call.headers }),
    HttpClientRequest.bodyUnsafeJson(call.body)
  )
  return openWithTimeouts(call.timeouts, call.provider)(Effect.gen(function*() {
    yield* Effect.logDebug("provider request").pipe(
      Effect.annotateLogs({ provider: call.provider, url: call.url, headers: Headers.redact(request.headers, ["authorization", "x-api-key"]) })
    )
    const response = yield* client.execute(request).pipe(Effect.mapError(transportError(call)))
    if (response.status < 200 || response.status >= 300) {
      const bodyText = yield* response.text.pipe(Effect.orElseSucceed(() => ""))
      const now = yield* Clock.currentTimeMillis
      return yield* Effect.fail(classifyFailure({
        provider: call.provider,
        status: response.status,
        error: errorObjectOf(parseJsonBody(bodyText)),
        bodyText,
        retryAfterMs: retryAfterMs((name) => response.headers[name], now),
        secrets
      }))
    }
    return response.stream.pipe(
      Stream.mapError((error) =>
        new ProviderConnectionLost({
          message: sanitize(`${call.provider}: stream from ${call.url} broke: ${describeCause(error.cause)}`, secrets)
        })
      )
    )
  }))
}

/**
 * The whole live pipeline: HTTP + SSE, the wire decoder, and one last scrub of every error message
 * (decoder messages quote wire data, which a server could make echo the key).
 */
export const streamEvents = (
  client: HttpClient.HttpClient,
  call: HttpCall,
  decoder: () => WireDecoder
): Stream.Stream<ProviderEvent, ProviderError> => {
  const secrets = secretsOf(call.apiKey)
  return requestBytes(client, call).pipe(
    decodeBody(call.provider, decoder),
    Stream.mapError((error) => sanitizeError(error, secrets)),
    Stream.tapError((error) =>
      Effect.logDebug("provider request failed").pipe(
        Effect.annotateLogs({ provider: call.provider, error: error._tag, message: error.message })
      )
    )
  )
}

/** `Authorization: Bearer …` when a key is configured (local servers need none). */
export const bearer = (apiKey: Option.Option<Redacted.Redacted<string>>): Record<string, string> =>
  Option.match(apiKey, {
    onNone: () => ({}),
    onSome: (key) => ({ authorization: `Bearer ${Redacted.value(key)}` })
  })

/** What distinguishes one live layer from another. */
export interface WireSpec {
  readonly provider: string
  /** Appended to the base URL. */
  readonly path: string
  readonly headers: (apiKey: Option.Option<Redacted.Redacted<string>>) => Record<string, string>
  readonly encode: (request: ProviderRequest, settings: LiveSettings) => unknown
  /** Called once per stream; the decoder it returns keeps that stream's state. */
  readonly decoder: (secrets: ReadonlyArray<string>) => () => WireDecoder
}

export const makeLive = (spec: WireSpec, settings: LiveSettings): Effect.Effect<Provider["Type"], never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) => {
    const url = `${settings.baseUrl}${spec.path}`
    const credentials = settings.credentials
    const open = (request: ProviderRequest, apiKey: Option.Option<Redacted.Redacted<string>>) =>
      streamEvents(client, {
        provider: spec.provider,
        url,
        headers: { "content-type": "application/json", ...spec.headers(apiKey) },
        body: spec.encode(request, settings),
        apiKey,
        timeouts: settings.timeouts
      }, spec.decoder(secretsOf(apiKey)))
    return Provider.of({
      model: settings.model,
      stream: (request) =>
        credentials === undefined
          // A fixed key: no effect to run first, so no stage to run it in.
          ? Stream.suspend(() => open(request, settings.apiKey))
          : Stream.unwrap(Effect.map(credentials.current, (apiKey) =>
            // A refused key is re-read at once (apiKeyHelper), so the next request can carry a new one.
            Stream.tapError(
              open(request, apiKey),
              (error) => (error._tag === "ProviderAuth" ? credentials.rejected(apiKey) : Effect.void)
            )))
    })
  })

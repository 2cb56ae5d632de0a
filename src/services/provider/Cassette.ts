import * as FileSystem from "@effect/platform/FileSystem"
import { Effect, Layer, Schema, Stream } from "effect"
import { createHash } from "node:crypto"
import { ConfigError } from "../../domain/Errors.js"
import { ProviderError, ProviderReplayMiss } from "../../domain/ProviderError.js"
import { ProviderEvent, type ProviderRequest } from "../../domain/ProviderEvent.js"
import { Provider } from "../Provider.js"

/**
 * Record / replay of Provider calls in a JSONL cassette, one line per call:
 * `{"hash","description","request","events":[…],"error"?}`. The hash covers only what the model sees,
 * so bookkeeping fields (otid, run ids, seq, durations, exit codes, what a result saw of files) never cause a miss. Identical
 * requests are served in recorded order; a call with no recording left fails with ProviderReplayMiss.
 */

const BOOKKEEPING = new Set(["otid", "run_id", "seq", "duration_ms", "exit_code", "files"])

/** The request as the model sees it: no bookkeeping fields, no absent optionals. */
export const normalizeRequest = (request: ProviderRequest): unknown => ({
  ...(request.model !== undefined ? { model: request.model } : {}),
  system: request.system,
  history: request.history.map((m) => Object.fromEntries(Object.entries(m).filter(([k]) => !BOOKKEEPING.has(k)))),
  tools: request.tools,
  ...(request.maxOutputTokens !== undefined ? { maxOutputTokens: request.maxOutputTokens } : {}),
  ...(request.thinking !== undefined ? { thinking: request.thinking } : {})
})

/** JSON with object keys sorted at every level, so equal values always serialize alike. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

export const requestHash = (request: ProviderRequest): string =>
  createHash("sha256").update(canonical(normalizeRequest(request))).digest("hex").slice(0, 16)

/** A short human description for cassette lines and miss messages. */
export const describeRequest = (request: ProviderRequest): string => {
  const last = request.history.at(-1)
  const content = last !== undefined && "content" in last ? last.content : last?.type === "tool_call" ? last.name : ""
  const excerpt = content.length > 60 ? `${content.slice(0, 60)}…` : content
  return [
    request.model !== undefined ? `model ${request.model}` : "default model",
    `${request.history.length} history items`,
    `${request.tools.length} tools`,
    last !== undefined ? `last ${last.type}${excerpt !== "" ? ` "${excerpt}"` : ""}` : "empty history"
  ].join(", ")
}

export const CassetteEntry = Schema.Struct({
  hash: Schema.String,
  description: Schema.String,
  request: Schema.Unknown,
  events: Schema.Array(ProviderEvent),
  error: Schema.optionalWith(ProviderError, { exact: true })
})
export type CassetteEntry = typeof CassetteEntry.Type

const CassetteLine = Schema.parseJson(CassetteEntry)
const encodeLine = Schema.encodeSync(CassetteLine)
const decodeLine = Schema.decodeUnknownEither(CassetteLine)

/** Wraps `inner`: every call that completes or fails (not one that is interrupted) is appended to `path`. */
export const record = (inner: Provider["Type"], path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const lock = yield* Effect.makeSemaphore(1)
    const append = (request: ProviderRequest, events: ReadonlyArray<ProviderEvent>, error?: ProviderError) =>
      lock.withPermits(1)(
        fs.writeFileString(
          path,
          `${
            encodeLine({
              hash: requestHash(request),
              description: describeRequest(request),
              request: normalizeRequest(request),
              events,
              ...(error !== undefined ? { error } : {})
            })
          }\n`,
          { flag: "a" }
        )
      ).pipe(Effect.orDie)
    return Provider.of({
      ...(inner.model !== undefined ? { model: inner.model } : {}),
      stream: (request) =>
        Stream.suspend(() => {
          const events: Array<ProviderEvent> = []
          return inner.stream(request).pipe(
            Stream.tap((event) => Effect.sync(() => events.push(event))),
            Stream.tapError((error) => append(request, events, error)),
            Stream.concat(Stream.execute(Effect.suspend(() => append(request, events))))
          )
        })
    })
  })

/** Records every call of the Provider it is given (`layerRecord(path).pipe(Layer.provide(live))`). */
export const layerRecord = (path: string): Layer.Layer<Provider, never, Provider | FileSystem.FileSystem> =>
  Layer.effect(Provider, Effect.flatMap(Provider, (inner) => record(inner, path)))

export const load = (path: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(path).pipe(
      Effect.mapError(() =>
        new ConfigError({ source: path, message: `cannot read the replay cassette ${path}` })
      )
    )
    const entries: Array<CassetteEntry> = []
    for (const [i, line] of text.split("\n").entries()) {
      if (line.trim() === "") continue
      const decoded = decodeLine(line)
      if (decoded._tag === "Left") {
        return yield* new ConfigError({ source: path, field: `line ${i + 1}`, message: `not a cassette entry: ${decoded.left.message.slice(0, 200)}` })
      }
      entries.push(decoded.right)
    }
    return entries
  })

export const replay = (entries: ReadonlyArray<CassetteEntry>, path: string) =>
  Effect.sync(() => {
    const byHash = new Map<string, Array<CassetteEntry>>()
    for (const entry of entries) byHash.set(entry.hash, [...(byHash.get(entry.hash) ?? []), entry])
    return Provider.of({
      stream: (request) =>
        Stream.suspend(() => {
          const hash = requestHash(request)
          const entry = byHash.get(hash)?.shift()
          if (entry === undefined) {
            return Stream.fail(
              new ProviderReplayMiss({
                requestHash: hash,
                message: `replay: no recording left in ${path} for request ${hash} (${describeRequest(request)})`
              })
            )
          }
          const events = Stream.fromIterable(entry.events).pipe(Stream.rechunk(1))
          return entry.error === undefined ? events : Stream.concat(events, Stream.fail(entry.error))
        })
    })
  })

/** Serves a cassette file; a missing or corrupt file is a ConfigError when the layer is built. */
export const layerReplay = (path: string): Layer.Layer<Provider, ConfigError, FileSystem.FileSystem> =>
  Layer.effect(Provider, Effect.flatMap(load(path), (entries) => replay(entries, path)))

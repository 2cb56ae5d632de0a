/**
 * How fast each live layer turns a long stream into events, over real loopback HTTP (the model
 * writes as fast as the socket takes it, so reads carry many events each).
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Effect, Option, Stream } from "effect"
import { Otid } from "../src/domain/Ids.js"
import type { ProviderEvent } from "../src/domain/ProviderEvent.js"
import * as ProviderAnthropic from "../src/services/provider/Anthropic.js"
import type { LiveSettings } from "../src/services/provider/Http.js"
import * as ProviderOpenAiChat from "../src/services/provider/OpenAiChat.js"
import * as ProviderOpenAiResponses from "../src/services/provider/OpenAiResponses.js"
import * as LoopbackModel from "./support/LoopbackModel.js"
import type { Row } from "./support/Table.js"

const deltas = 10_000
const text = Array.from({ length: deltas }, (_, i) => `w${i} `)

const providerFor = (wire: LoopbackModel.Wire, live: LiveSettings) =>
  (wire === "openai-chat" ? ProviderOpenAiChat.make(live) : wire === "anthropic" ? ProviderAnthropic.make(live) : ProviderOpenAiResponses.make(live))
    .pipe(Effect.provide(FetchHttpClient.layer))

const measure = (wire: LoopbackModel.Wire) =>
  Effect.gen(function*() {
    const server = yield* Effect.acquireRelease(Effect.promise(() => LoopbackModel.start({ wire, deltas: text })), (s) => Effect.promise(s.close))
    const provider = yield* providerFor(wire, {
      model: "bench",
      baseUrl: server.baseUrl,
      apiKey: Option.none(),
      timeouts: { firstByteMs: 10_000, stallMs: 10_000 }
    })
    const once = Effect.gen(function*() {
      const start = performance.now()
      const count = yield* provider.stream({
        system: "",
        history: [{ type: "user_message", content: "go", otid: Otid.make("bench") }],
        tools: []
      }).pipe(Stream.runFold(0, (n, e: ProviderEvent) => (e._tag === "TextDelta" ? n + 1 : n)))
      return { ms: performance.now() - start, count }
    })
    yield* once // warm-up
    const runs = [yield* once, yield* once]
    const best = Math.min(...runs.map((r) => r.ms))
    return { wire, deltas: runs[0]!.count, bestMs: Math.round(best), deltasPerSecond: Math.round(runs[0]!.count / (best / 1000)) }
  }).pipe(Effect.scoped, Effect.orDie)

export const providerRows = Effect.map(
  Effect.forEach(["openai-chat", "anthropic", "openai-responses"] as const, measure),
  (results): ReadonlyArray<Row> =>
    results.map((r) => ({ figure: `provider: ${r.wire}, ${r.deltas.toLocaleString("en")} deltas decoded`, value: r.deltasPerSecond, unit: "deltas/s" }))
)

/**
 * How fast each live layer turns a long stream into events, over real loopback HTTP.
 * Run: npx tsx bench/ProviderThroughput.ts [deltas]
 */
import { Effect, Stream } from "effect"
import type { ProviderEvent } from "../src/domain/ProviderEvent.js"
import * as MockModelServer from "../test/support/MockModelServer.js"
import { Reply } from "../test/support/MockModelServer.js"
import type { Wire } from "../test/support/MockWire.js"
import { liveProvider, request, settings } from "../test/support/ProviderHarness.js"

const deltas = Number(process.argv[2] ?? 20_000)
const text = Array.from({ length: deltas }, (_, i) => `w${i} `)

const measure = (wire: Wire) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [Reply.text(text), Reply.text(text), Reply.text(text)] })
    const provider = yield* liveProvider(wire, settings(server.baseUrl(wire)))
    const once = Effect.gen(function*() {
      const start = performance.now()
      const count = yield* provider.stream(request()).pipe(
        Stream.runFold(0, (n, e: ProviderEvent) => (e._tag === "TextDelta" ? n + 1 : n))
      )
      return { ms: performance.now() - start, count }
    })
    yield* once // warm-up
    const runs = [yield* once, yield* once]
    const best = Math.min(...runs.map((r) => r.ms))
    return { wire, deltas: runs[0]!.count, bestMs: Math.round(best), deltasPerSecond: Math.round(runs[0]!.count / (best / 1000)) }
  }).pipe(Effect.scoped, Effect.orDie)

const main = Effect.forEach(["openai-chat", "anthropic", "openai-responses"] as const, measure).pipe(
  Effect.tap((rows) => Effect.sync(() => console.table(rows)))
)

Effect.runPromise(main)

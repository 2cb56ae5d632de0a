import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Layer, Stream } from "effect"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import * as PE from "../../src/domain/ProviderError.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Backend } from "../../src/services/Backend.js"
import { Provider } from "../../src/services/Provider.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { awaitSleeps, collect, input, user } from "../support/testing.js"

/** The memory store, noting the chunk types of every commit. */
const countingStore = (commits: Array<ReadonlyArray<string>>) =>
  Layer.effect(Store, Effect.map(Store, (store) => Store.of({
    ...store,
    commit: (write) => Effect.zipRight(Effect.sync(() => commits.push((write.chunks ?? []).map((c) => c.type))), store.commit(write))
  }))).pipe(Layer.provide(layerMemory))

describe("the run", () => {
  it.effect("commits once per provider chunk (the events of one network read), never once per event", () => {
    const commits: Array<ReadonlyArray<string>> = []
    const reads: ReadonlyArray<Chunk.Chunk<ProviderEvent>> = [
      Chunk.fromIterable<ProviderEvent>([{ _tag: "TextDelta", text: "Hel" }, { _tag: "TextDelta", text: "lo, " }]),
      Chunk.fromIterable<ProviderEvent>([
        { _tag: "TextDelta", text: "world" },
        { _tag: "Usage", inputTokens: 3, outputTokens: 3, cachedInputTokens: 0, totalTokens: 6 },
        { _tag: "Finish", reason: "stop" }
      ])
    ]
    const provider = Layer.succeed(Provider, Provider.of({ stream: () => Stream.fromChunks(...reads) }))
    return Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* backend.createConversation({ system_prompt: "" })
      const chunks = yield* collect(backend.send(conv.id, input(user("hi"))))
      assert.strictEqual(chunks.at(-1)?.type, "stop_reason")
      assert.deepStrictEqual(commits.filter((c) => c.length > 0), [
        ["request_begin"],
        ["text_delta", "text_delta"],
        ["text_delta", "assistant_message"],
        ["token_usage", "request_end", "stop_reason"]
      ])
    }).pipe(Effect.provide(layerLocal().pipe(Layer.provideMerge(provider), Layer.provide(countingStore(commits)))))
  })

  it.effect("a cancel during the reconnect wait records the failed attempt's messages once", () =>
    Effect.gen(function*() {
      const backend = yield* Backend
      const conv = yield* backend.createConversation({ system_prompt: "" })
      const fiber = yield* Effect.fork(collect(backend.send(conv.id, input(user("go")))))
      yield* awaitSleeps()
      yield* backend.cancel(conv.id)
      const chunks = yield* Fiber.join(fiber)
      const stop = chunks.at(-1)!
      assert.strictEqual(stop.type === "stop_reason" && stop.reason, "cancelled")
      const trace = (yield* backend.history(conv.id)).filter((h) => h.inTrace).map((h) => h.item)
      const said = trace.flatMap((item) => (item.type === "assistant_message" ? [item.content] : []))
      const calls = trace.flatMap((item) => (item.type === "tool_call" ? [item.tool_call_id] : []))
      assert.deepStrictEqual(said, ["Let me look.", "and then"])
      assert.deepStrictEqual(calls.map(String), ["c1"])
    }).pipe(Effect.provide(layerLocal().pipe(
      Layer.provideMerge(layerScripted([
        Turn.fail(new PE.ProviderTimeout({ phase: "stall", afterMs: 1000, message: "no event for 1 s" }), [
          { _tag: "TextDelta", text: "Let me look." },
          { _tag: "ToolCallStart", id: "c1", name: "Read" },
          { _tag: "ToolCallDelta", id: "c1", argumentsDelta: "{}" },
          { _tag: "ToolCallEnd", id: "c1", name: "Read", arguments: "{}" },
          { _tag: "TextDelta", text: "and then" }
        ])
      ])),
      Layer.provide(layerMemory)
    ))))
})

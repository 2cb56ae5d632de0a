import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Layer, Stream } from "effect"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import { layerLocal } from "../../src/programs/backend/BackendLocal.js"
import { Backend } from "../../src/services/Backend.js"
import { Provider } from "../../src/services/Provider.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { collect, input, user } from "../support/testing.js"

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
})

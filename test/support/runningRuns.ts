import { Effect } from "effect"
import { Otid } from "../../src/domain/Ids.js"
import type { Store } from "../../src/services/Store.js"

/** `n` conversations, each with a running run: what a group of commits writes to. */
export const conversationsWithRuns = (store: Store["Type"], n: number) =>
  Effect.forEach(Array.from({ length: n }), (_, i) =>
    Effect.gen(function*() {
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make(`o${i}`), "turn")
      return { conversation: conversation.id, run: run.id }
    }))

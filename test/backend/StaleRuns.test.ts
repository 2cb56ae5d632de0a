import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConversationId, Otid, RunId } from "../../src/domain/Ids.js"
import type { Run } from "../../src/domain/Run.js"
import { makeStaleRunSweep } from "../../src/programs/backend/StaleRuns.js"

const run = (id: string, lastSeq = 0, updatedAt = 1): Run => ({
  id: RunId.make(id),
  conversationId: ConversationId.make(`conv-${id}`),
  otid: Otid.make(`otid-${id}`),
  kind: "turn",
  status: "running",
  stopReason: undefined,
  lastSeq,
  owner: "gone:1",
  createdAt: 0,
  updatedAt
})

/**
 * Which runs one look hands on: only a run of a conversation this runner holds, with no job here,
 * found unchanged by the look before — a Drive on its way, or a job just stopping, gets one period.
 */
it.effect("a look hands on only runs held here, jobless, and unchanged since the look before", () =>
  Effect.gen(function*() {
    let running: ReadonlyArray<Run> = [run("stranded"), run("moving"), run("live"), run("elsewhere")]
    const resumed: Array<RunId> = []
    const look = makeStaleRunSweep({
      store: { runningRuns: Effect.sync(() => running) },
      holds: (id) => id !== ConversationId.make("conv-elsewhere"),
      hasJob: (id) => Effect.succeed(id === RunId.make("live")),
      resume: (r) => Effect.sync(() => void resumed.push(r.id))
    })

    assert.deepStrictEqual(yield* look, [], "the first look only takes note")
    running = [run("stranded"), run("moving", 3, 2), run("live"), run("elsewhere"), run("new")]
    assert.deepStrictEqual(yield* look, [RunId.make("stranded")], "a run that committed, or was first seen, waits a look more")
    assert.deepStrictEqual(resumed, [RunId.make("stranded")])
    running = [run("moving", 3, 2), run("new")]
    assert.deepStrictEqual(yield* look, [RunId.make("moving"), RunId.make("new")])
  }))

import { assert, describe, it } from "@effect/vitest"
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"
import * as Path from "node:path"
import type { Chunk } from "../../src/domain/Events.js"
import { Otid, type RunId } from "../../src/domain/Ids.js"
import { openDatabase } from "../../src/services/store/sqlite/Open.js"
import { makeSqliteStore } from "../../src/services/store/sqlite/SqliteStore.js"
import { tempDir } from "../support/tempDir.js"

/**
 * What one commit costs the SQLite store, counted rather than timed: the statements it runs on the
 * connection and the Effect run-loop steps of every fiber involved (the caller's and the group-commit
 * writer's). Neither may grow with the run's or the conversation's length, and a commit's
 * statements run on the connection directly instead of each through @effect/sql's span, scope,
 * semaphore and prepared-statement cache (about a hundred steps a statement).
 */

/** Counts the run-loop steps of the fibers it supervises (with op supervision on). */
class StepCounter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  readonly value = Effect.sync(() => this.steps)
  override onEffect(): void {
    this.steps++
  }
}

const delta = (runId: RunId, seq: number): Chunk => ({ type: "text_delta", content: `d${seq}`, run_id: runId, seq })

const LONG = 400

describe("SQLite commit cost", () => {
  it.scoped("a commit costs the same statements and steps on a long run and history as on a short one", () => {
    const counter = new StepCounter()
    return Effect.gen(function*() {
      const path = Path.join(yield* tempDir, "baton.db")
      const sql = yield* openDatabase({ filename: path })
      const store = yield* makeSqliteStore(sql, path)
      const conversation = yield* store.createConversation({})
      const { run } = yield* store.createRun(conversation.id, Otid.make("o-1"), "turn")
      let seq = 0
      let said = 0
      const measure = <A, E>(commit: Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const statements = sql.statements()
          const steps = counter.steps
          yield* commit
          return { statements: sql.statements() - statements, steps: counter.steps - steps }
        })
      const streamed = Effect.suspend(() => store.commit({ conversationId: conversation.id, chunks: [delta(run.id, ++seq)] }))
      const recorded = Effect.suspend(() =>
        store.commit({ conversationId: conversation.id, items: [{ item: { type: "user_message", content: `m${++said}`, otid: Otid.make(`m-${said}`) } }] })
      )
      const reads = Effect.suspend(() => store.listItems(conversation.id, { after: said - 1 }))

      // Warm-up: statements prepared, texts compiled.
      for (let i = 0; i < 3; i++) yield* Effect.all([streamed, recorded, reads])
      const early = { streamed: yield* measure(streamed), recorded: yield* measure(recorded), reads: yield* measure(reads) }
      for (let i = 0; i < LONG; i++) yield* Effect.all([streamed, recorded])
      const late = { streamed: yield* measure(streamed), recorded: yield* measure(recorded), reads: yield* measure(reads) }

      // BEGIN, stamp the run, insert the chunk, set its last seq, COMMIT.
      assert.strictEqual(early.streamed.statements, 5)
      // BEGIN, the conversation's head, the item, COMMIT.
      assert.strictEqual(early.recorded.statements, 4)
      assert.strictEqual(early.reads.statements, 1)
      assert.deepStrictEqual(
        { streamed: late.streamed.statements, recorded: late.recorded.statements, reads: late.reads.statements },
        { streamed: 5, recorded: 4, reads: 1 }
      )
      // Through @effect/sql's statements and transactions these were 458, 447 and 148 steps.
      assert.isAtMost(early.streamed.steps, 200)
      assert.isAtMost(early.recorded.steps, 260)
      assert.isAtMost(early.reads.steps, 70)
      for (const kind of ["streamed", "recorded", "reads"] as const) {
        // The same work: a handful of steps of slack for where the scheduler yields.
        assert.isAtMost(Math.abs(late[kind].steps - early[kind].steps), 10, `${kind}: ${early[kind].steps} then ${late[kind].steps} steps`)
      }
    }).pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
  })
})

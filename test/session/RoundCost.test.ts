import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, RuntimeFlags, RuntimeFlagsPatch, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Chunk, TaskEvent } from "../../src/domain/Events.js"
import { RunId, Seq, ToolCallId } from "../../src/domain/Ids.js"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { noModel } from "../../src/programs/cli/Layers.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { counted } from "../support/effectSteps.js"
import { localBackend } from "../support/serverHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * What one model round trip costs the session itself (the task loop, the tool batch, the approval
 * gate, the run's stream as the task reads it), counted, not timed: the backend answers every send
 * with a canned run (a Read call, then the answer) and takes every result at once, so every step
 * counted is the client's. Steps are counted from the first send on: the task's fiber is started from
 * a Runtime (default flags), and the executor's tool list, which the task reads before every send,
 * turns counting on for it.
 */

const chunksOf = (run: number, events: ReadonlyArray<TaskEvent>): ReadonlyArray<Chunk> =>
  events.map((event, i) => ({ ...event, run_id: RunId.make(`run-${run}`), seq: Seq.make(i + 1) }) as Chunk)

const task = (rounds: number) =>
  Effect.gen(function*() {
    const workspace = Path.join(yield* tempDir, "ws")
    Fs.mkdirSync(workspace)
    Fs.writeFileSync(Path.join(workspace, "a.txt"), "hello\n".repeat(50))
    const real = yield* localBackend.pipe(Effect.provide(Layer.merge(layerMemory, noModel)))
    let sends = 0
    const backend = Backend.of({
      ...real,
      send: () =>
        Stream.suspend(() => {
          const run = ++sends
          const events: ReadonlyArray<TaskEvent> = run <= rounds
            ? [
              { type: "request_begin", attempt: 0 },
              { type: "tool_call", tool_call_id: ToolCallId.make(`call-${run}`), name: "Read", arguments: JSON.stringify({ file_path: "a.txt" }) },
              { type: "request_end", status: "ok", attempt: 0 },
              { type: "stop_reason", reason: "requires_approval" }
            ]
            : [
              { type: "request_begin", attempt: 0 },
              { type: "text_delta", content: "It says hello." },
              { type: "request_end", status: "ok", attempt: 0 },
              { type: "stop_reason", reason: "end_turn" }
            ]
          return Stream.fromIterable(chunksOf(run, events))
        }),
      submitResult: () => Effect.void
    })
    const executor = yield* makeToolExecutor({ workspace })
    const counting = ToolExecutor.of({
      ...executor,
      definitions: Effect.zipRight(Effect.patchRuntimeFlags(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)), executor.definitions)
    })
    const session = yield* open({ approver: () => Effect.succeed("allow") }).pipe(
      Effect.provideService(Backend, backend),
      Effect.provideService(ToolExecutor, counting)
    )
    const { fibers, result, steps } = yield* counted(Stream.runCollect(session.run("what does a.txt say?")))
    const returns = [...result].filter((e) => e.type === "tool_return")
    assert.strictEqual(returns.length, rounds)
    assert.isTrue(returns.every((r) => r.type === "tool_return" && r.status === "success"))
    assert.strictEqual(sends, rounds + 1)
    return { steps, fibers }
  }).pipe(Effect.scoped)

describe("a round trip's cost to the session", () => {
  it.live("Effect steps and fibers per model round trip (a Read call approved, run and answered)", () =>
    Effect.gen(function*() {
      const one = yield* task(1)
      const eleven = yield* task(11)
      const steps = (eleven.steps - one.steps) / 10
      const fibers = (eleven.fibers - one.fibers) / 10
      // The approver's loop and the tool's watcher (the batch), the tool, and one in reading the run.
      assert.isAtMost(fibers, 4)
      // 1,811 while the session wrapped every run's stream in one more Stream.unwrap to sync the tool list
      // (1,671 without it), and the batch's scope and every added call had spans of their own (1,598 without).
      assert.isAtMost(steps, 1_650)
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream, Tracer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { open } from "../../src/programs/session/Session.js"
import { Backend } from "../../src/services/Backend.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { ToolExecutor } from "../../src/services/ToolExecutor.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { localBackend } from "../support/serverHarness.js"
import { tempDir } from "../support/tempDir.js"

/**
 * A task over the local backend (what `baton run` builds) keeps its conversation's actor for the
 * whole task: every model round is a Send and every tool result a SubmitResult to the same live
 * actor, activated once, not reloaded from the Store each round. Counted by span: a tracer that
 * counts the spans started, by name.
 */

const countingTracer = () => {
  const started = new Map<string, number>()
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      started.set(name, (started.get(name) ?? 0) + 1)
      const span: Tracer.Span = {
        _tag: "Span",
        name,
        spanId: `${name}-${started.get(name)}`,
        traceId: "t",
        parent,
        context,
        status: { _tag: "Started", startTime },
        attributes: new Map(),
        links,
        sampled: true,
        kind,
        end: () => undefined,
        attribute: () => undefined,
        event: () => undefined,
        addLinks: () => undefined
      }
      return span
    },
    context: (f) => f()
  })
  return { count: (name: string) => started.get(name) ?? 0, tracer }
}

describe("a task's conversation actor", () => {
  it.live("is activated once over a 3-round task (3 Read calls run, then the answer)", () =>
    Effect.gen(function*() {
      const workspace = Path.join(yield* tempDir, "ws")
      Fs.mkdirSync(workspace)
      Fs.writeFileSync(Path.join(workspace, "a.txt"), "hello\n")
      const read = (i: number) => Turn.toolCalls([{ id: `call-${i}`, name: "Read", args: { file_path: "a.txt" } }])
      const script = layerScripted([read(1), read(2), read(3), Turn.text("It says hello.")])
      const backend = yield* localBackend.pipe(Effect.provide(Layer.merge(layerMemory, script)))
      const session = yield* open({ approver: () => Effect.succeed("allow") }).pipe(
        Effect.provideService(Backend, backend),
        Effect.provideService(ToolExecutor, yield* makeToolExecutor({ workspace }))
      )
      const { count, tracer } = countingTracer()
      const events = yield* Stream.runCollect(session.run("what does a.txt say?")).pipe(Effect.withTracer(tracer))
      assert.strictEqual([...events].filter((e) => e.type === "tool_return" && e.status === "success").length, 3)
      assert.strictEqual(count("Admission.send"), 4, "a send per model round")
      assert.strictEqual(count("ConversationActor.submitResult"), 3, "a result per tool call")
      assert.strictEqual(count("ConversationActor.start"), 1, "one activation for the whole task")
    }).pipe(Effect.scoped))
})

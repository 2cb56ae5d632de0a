import { assert, describe, it } from "@effect/vitest"
import { Effect, FiberId, FiberRef, HashSet, Layer, Logger } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { baton } from "../../src/Cli.js"
import { commandTree, resolve } from "../../src/programs/cli/CommandTree.js"
import { noCommonArgs } from "../../src/programs/cli/CommonArgs.js"
import { freshEnv } from "../../src/programs/cli/Env.js"
import { helpPage } from "../../src/programs/cli/HelpPage.js"
import * as Layers from "../../src/programs/cli/Layers.js"
import { withPlatform } from "../../src/programs/cli/Platform.js"
import { counted } from "../support/effectSteps.js"
import { tempDir } from "../support/tempDir.js"

/**
 * What every command pays before it runs, counted rather than timed (Effect steps and fibers, or the
 * fibers made). Rendering a HelpDoc runs
 * @effect/printer's layout in a fiber of its own (Effect.runSync, hundreds of steps); rendering every
 * option's description when the command tree was built cost each start-up ~3,300 Effect steps, for
 * text only a help page or a usage error reads. Fibers are counted by the runtime's fiber ids, which
 * are handed out one after another.
 */

const fibersMadeBy = (f: () => void): number => {
  const before = FiberId.unsafeMake().id
  f()
  return FiberId.unsafeMake().id - before - 1
}

describe("start-up work", () => {
  it("reading a command line renders no description; a help page renders its own, once", () => {
    let run: ReturnType<typeof resolve>["command"] | undefined
    const reading = fibersMadeBy(() => {
      run = resolve(commandTree(baton.descriptor), ["run", "--json", "hello"]).command
    })
    assert.deepStrictEqual(run?.path, ["run"])
    assert.isAbove(run!.options.length, 5)
    assert.strictEqual(reading, 0, "building and resolving the command tree ran the printer")
    let page = ""
    const rendering = fibersMadeBy(() => {
      page = helpPage(run!)
    })
    assert.include(page, "Print one JSON object per line on stdout")
    assert.isAbove(rendering, 5, "sanity: a page renders its descriptions")
    assert.strictEqual(fibersMadeBy(() => helpPage(run!)), 0, "a description is rendered once")
  })
})

describe("what a command builds before it runs", () => {
  it.effect("the platform every command runs in: the three services and the logger, in a few hundred steps and no fiber", () =>
    Effect.gen(function*() {
      const { fibers, steps } = yield* counted(withPlatform(Effect.void))
      // As one merged layer with Logger.replace: ~1,400 steps.
      assert.strictEqual(fibers, 0)
      assert.isAtMost(steps, 800)
      // The logger is replaced, not added to: a warning is printed once.
      const loggers = yield* withPlatform(FiberRef.get(FiberRef.currentLoggers))
      assert.isFalse(HashSet.has(loggers, Logger.defaultLogger))
      const outer = yield* FiberRef.get(FiberRef.currentLoggers)
      assert.strictEqual(HashSet.size(loggers), HashSet.size(HashSet.remove(outer, Logger.defaultLogger)) + 1)
    }))

  it.scoped("a task command's backend and tools: built as effects, not a tree of layers (the home's database already there)", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const workspace = Path.join(root, "ws")
      Fs.mkdirSync(workspace)
      const env = freshEnv({ home: Path.join(root, "home"), workspace }, { ...noCommonArgs, sandbox: "off" })
      // The first build creates the database (its migrations are the store's own work, not counted here).
      yield* Effect.scoped(Layer.build(Layers.task(env, Layers.noModel)))
      const { fibers, steps } = yield* counted(Effect.scoped(Layer.build(Layers.task(env, Layers.noModel))))
      // As a tree of layers (the backend's and the tools' merged, the programs' Default layers merged):
      // 7,676 steps and 38 fibers; as effects 3,472 and 4.
      assert.isAtMost(fibers, 8)
      assert.isAtMost(steps, 4_500)
    }))
})

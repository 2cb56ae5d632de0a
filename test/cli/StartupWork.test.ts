import { assert, describe, it } from "@effect/vitest"
import { FiberId } from "effect"
import { baton } from "../../src/Cli.js"
import { commandTree, resolve } from "../../src/programs/cli/CommandTree.js"
import { helpPage } from "../../src/programs/cli/HelpPage.js"

/**
 * What every command pays before it runs, counted rather than timed. Rendering a HelpDoc runs
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

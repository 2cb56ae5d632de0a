import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit } from "effect"
import * as Fs from "node:fs"
import * as ServeConfig from "../../src/programs/cli/ServeConfig.js"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"

/** `baton serve --passivation MS` / BATON_PASSIVATION_MS: how long an idle conversation's actor stays in memory. */
describe("baton serve --passivation", () => {
  it.effect("the flag becomes the local backend's passivation; absent, the backend keeps its default", () =>
    Effect.gen(function*() {
      const given = yield* ServeConfig.passivation({ host: undefined, port: undefined, token: undefined, passivationMs: 250 })
      assert.isDefined(given.passivation)
      assert.strictEqual(Duration.toMillis(Duration.decode(given.passivation!)), 250)
      assert.deepStrictEqual(yield* ServeConfig.passivation({ host: undefined, port: undefined, token: undefined }), {})
      const tooShort = yield* Effect.exit(ServeConfig.passivation({ host: undefined, port: undefined, token: undefined, passivationMs: 99 }))
      assert.isTrue(Exit.isFailure(tooShort))
    }))

  const cases: ReadonlyArray<{ readonly name: string; readonly args: ReadonlyArray<string>; readonly env?: Record<string, string>; readonly says: ReadonlyArray<string> }> = [
    { name: "zero", args: ["--passivation", "0"], says: ["--passivation", "100 to 86400000", "got 0"] },
    { name: "from the environment, over a day", args: [], env: { BATON_PASSIVATION_MS: "90000000" }, says: ["BATON_PASSIVATION_MS", "got 90000000"] }
  ]
  for (const c of cases) {
    it.scopedLive(`${c.name}: exit 2, says what is wrong, opens nothing`, () =>
      Effect.gen(function*() {
        const model = yield* MockModelServer.make()
        const dirs = yield* cliDirs
        const result = yield* runCli(["serve", "--port", "0", ...c.args, "--home", dirs.home], { env: { ...model.childEnv("openai-chat"), ...c.env } })
        assert.strictEqual(result.code, 2, `${c.name}: ${result.stderr}`)
        for (const text of c.says) assert.include(result.stderr, text, c.name)
        assert.deepStrictEqual(Fs.readdirSync(dirs.home), [], "nothing written")
      }))
  }
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Redacted, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeCredentials } from "../../src/services/provider/Credentials.js"
import { tempDir } from "../support/tempDir.js"

/**
 * A real apiKeyHelper (through the shell) whose key the test rotates by rewriting a file; each run of
 * it is counted in another file, so "nothing was read" is a count, not a wait.
 */
const withHelper = Effect.gen(function*() {
  const dir = yield* tempDir
  const file = Path.join(dir, "key")
  const runs = Path.join(dir, "runs")
  Fs.writeFileSync(file, "sk-old\n")
  const credentials = yield* makeCredentials({ initial: Option.none(), source: "apiKeyHelper", helper: { command: "echo run >> runs; cat key", cwd: dir } })
  yield* credentials.refresh
  return {
    credentials,
    rotate: (key: string) => Fs.writeFileSync(file, `${key}\n`),
    helperRuns: () => Fs.readFileSync(runs, "utf8").split("\n").filter((l) => l !== "").length
  }
})

const keyOf = (key: Option.Option<Redacted.Redacted<string>>) => Option.map(key, Redacted.value)

describe("credentials: a refused helper key is re-read until it changes", () => {
  it.scopedLive("a change answers the refusal once; after that nothing is read until the next refusal", () =>
    Effect.gen(function*() {
      const { credentials, helperRuns, rotate } = yield* withHelper
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-old"))
      yield* credentials.rejected(yield* credentials.current)
      rotate("sk-new")
      assert.isTrue(yield* credentials.changed)
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-new"))
      // Answered: no refusal stands, so the helper is not run again and nothing more is said.
      rotate("sk-newer")
      const before = helperRuns()
      assert.isFalse(yield* credentials.changed)
      assert.strictEqual(helperRuns(), before, "the helper was not run again")
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-new"))
    }))

  it.scopedLive("the stream emits when the helper starts printing another key", () =>
    Effect.gen(function*() {
      const { credentials, rotate } = yield* withHelper
      yield* credentials.rejected(yield* credentials.current)
      rotate("sk-new")
      assert.isTrue(Option.isSome(yield* Stream.runHead(credentials.changes)))
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-new"))
    }))

  it.scopedLive("no change while the helper still prints the refused key; without a helper, nothing to look at", () =>
    Effect.gen(function*() {
      const { credentials, helperRuns } = yield* withHelper
      yield* credentials.rejected(yield* credentials.current)
      const before = helperRuns()
      assert.isFalse(yield* credentials.changed)
      assert.isAbove(helperRuns(), before, "it did look")
      const fixed = yield* makeCredentials({ initial: Option.some(Redacted.make("sk-env")), source: "BATON_API_KEY" })
      yield* fixed.rejected(yield* fixed.current)
      assert.isFalse(yield* fixed.changed)
    }))
})

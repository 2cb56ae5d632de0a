import { assert, describe, it } from "@effect/vitest"
import { Chunk, Effect, Option, Redacted, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeCredentials } from "../../src/services/provider/Credentials.js"
import { tempDir } from "../support/tempDir.js"

/** A real apiKeyHelper (`cat key`, through the shell) whose key the test rotates by rewriting the file. */
const withHelper = Effect.gen(function*() {
  const dir = yield* tempDir
  const file = Path.join(dir, "key")
  Fs.writeFileSync(file, "sk-old\n")
  const credentials = yield* makeCredentials({ initial: Option.none(), source: "apiKeyHelper", helper: { command: "cat key", cwd: dir } })
  yield* credentials.refresh
  return { credentials, rotate: (key: string) => Fs.writeFileSync(file, `${key}\n`) }
})

const keyOf = (key: Option.Option<Redacted.Redacted<string>>) => Option.map(key, Redacted.value)

describe("credentials: a refused helper key is re-read until it changes", () => {
  it.scopedLive("changes emits once when the helper's key differs from the refused one, then waits for the next refusal", () =>
    Effect.gen(function*() {
      const { credentials, rotate } = yield* withHelper
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-old"))
      yield* credentials.rejected(yield* credentials.current)
      rotate("sk-new")
      const seen = yield* Stream.runCollect(credentials.changes("10 millis").pipe(Stream.take(1)))
      assert.strictEqual(Chunk.size(seen), 1)
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-new"))
      // Answered: no refusal stands, so nothing more is read or said (the stream would emit again otherwise).
      rotate("sk-newer")
      const more = yield* credentials.changes("10 millis").pipe(Stream.take(1), Stream.runCollect, Effect.timeoutOption("200 millis"))
      assert.isTrue(Option.isNone(more))
      assert.deepStrictEqual(keyOf(yield* credentials.current), Option.some("sk-new"), "the helper was not run again")
    }))

  it.scopedLive("no emission while the helper still prints the refused key; without a helper, never", () =>
    Effect.gen(function*() {
      const { credentials } = yield* withHelper
      yield* credentials.rejected(yield* credentials.current)
      const same = yield* credentials.changes("10 millis").pipe(Stream.take(1), Stream.runCollect, Effect.timeoutOption("200 millis"))
      assert.isTrue(Option.isNone(same))
      const fixed = yield* makeCredentials({ initial: Option.some(Redacted.make("sk-env")), source: "BATON_API_KEY" })
      yield* fixed.rejected(yield* fixed.current)
      const never = yield* fixed.changes("10 millis").pipe(Stream.take(1), Stream.runCollect, Effect.timeoutOption("100 millis"))
      assert.isTrue(Option.isNone(never))
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"

/** `serve --cluster` refuses a configuration it cannot run, with exit 2, before it opens anything. */
const cases: ReadonlyArray<{ readonly name: string; readonly args: ReadonlyArray<string>; readonly env?: Record<string, string>; readonly says: ReadonlyArray<string> }> = [
  { name: "no database", args: ["serve", "--cluster"], says: ["--cluster needs", "--database", "SQLite stays single-node"] },
  { name: "a SQLite-style URL", args: ["serve", "--cluster", "--database", "sqlite:///tmp/x.db"], says: ["PostgreSQL URL"] },
  {
    name: "a lock expiry under a second",
    args: ["serve", "--cluster", "--database", "postgres://u:secret@127.0.0.1:1/x", "--shard-lock-expiration", "10"],
    says: ["--shard-lock-expiration", "1000 to 600000", "got 10"]
  },
  {
    name: "a lock expiry from the environment",
    args: ["serve", "--cluster", "--database", "postgres://u:secret@127.0.0.1:1/x"],
    env: { BATON_SHARD_LOCK_EXPIRATION_MS: "999999" },
    says: ["BATON_SHARD_LOCK_EXPIRATION_MS", "got 999999"]
  },
  { name: "a runner port out of range", args: ["serve", "--cluster", "--database", "postgres://u:secret@127.0.0.1:1/x", "--runner-port", "70000"], says: ["--runner-port", "70000"] },
  { name: "runner flags without --cluster", args: ["serve", "--runner-port", "34431"], says: ["only apply with --cluster"] }
]

describe("baton serve --cluster: bad flags", () => {
  for (const c of cases) {
    it.scopedLive(`${c.name}: exit 2, says what is wrong, opens nothing`, () =>
      Effect.gen(function*() {
        const model = yield* MockModelServer.make()
        const dirs = yield* cliDirs
        const result = yield* runCli([...c.args, "--home", dirs.home], { env: { ...model.childEnv("openai-chat"), ...c.env } })
        assert.strictEqual(result.code, 2, `${c.name}: ${result.stderr}`)
        for (const text of c.says) assert.include(result.stderr, text, c.name)
        assert.notInclude(result.stderr, "secret", "the database password is never shown")
        assert.deepStrictEqual(Fs.readdirSync(dirs.home), [], "nothing written")
      }))
  }
})

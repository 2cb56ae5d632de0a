import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { BIN, cleanEnv, cliDirs, runCli, startListening, startServe } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply, userTexts } from "../support/MockModelServer.js"

/** A CLI child whose stderr can be waited on while it runs (`said`), killed with the scope. */
const startWatched = (args: ReadonlyArray<string>, env: Record<string, string>, input: string) =>
  Effect.gen(function*() {
    const waiting = yield* Deferred.make<void>()
    const done = yield* Deferred.make<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>()
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(env), stdio: ["pipe", "pipe", "pipe"] })
        let stdout = ""
        let stderr = ""
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
        child.stderr.setEncoding("utf8").on("data", (c: string) => {
          stderr += c
          if (stderr.includes("waiting for the server")) Deferred.unsafeDone(waiting, Effect.void)
        })
        child.stdin.end(input)
        child.once("close", (code) => Deferred.unsafeDone(done, Effect.succeed({ code, stdout, stderr })))
        return child
      }),
      (child) => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL")))
    )
    return { waiting: Deferred.await(waiting), result: Deferred.await(done) }
  })

describe("a --server client across a server restart (built CLI)", () => {
  it.scopedLive("chat --continue waits for a server that is restarting, says so, and continues the conversation", () =>
    Effect.gen(function*() {
      const model = yield* MockModelServer.make({ replies: [Reply.text("first answer"), Reply.text("second answer")] })
      const dirs = yield* cliDirs
      const serverHome = Path.join(dirs.root, "server-home")
      const first = yield* startServe(["--home", serverHome], model.childEnv("openai-chat"))
      const port = new URL(first.url).port
      const client = { BATON_HOME: dirs.home }
      const opening = yield* runCli(["run", "--server", first.url, "-w", dirs.workspace, "remember the word tangerine"], { env: client })
      assert.strictEqual(opening.code, 0, opening.stderr)
      yield* first.signal("SIGKILL")
      yield* first.exited

      // Nothing listens on the port now: the chat starts anyway and waits for it.
      const chat = yield* startWatched(["chat", "--server", first.url, "-w", dirs.workspace, "--continue"], client, "which word?\n")
      yield* chat.waiting
      yield* startListening("serve", ["--port", port, "--home", serverHome], model.childEnv("openai-chat"))
      const result = yield* chat.result
      assert.strictEqual(result.code, 0, result.stderr)
      assert.match(result.stderr, /waiting for the server: cannot reach the Baton server at http:\/\/127\.0\.0\.1:\d+ .*\(trying again in \d+\.\d s\)/)
      assert.include(result.stdout, "second answer")
      const requests = yield* model.requests
      assert.strictEqual(requests.length, 2)
      assert.deepStrictEqual(userTexts(requests[1]!).filter((t) => t.includes("tangerine") || t.includes("which word")).length, 2, "the continued conversation")
    }), 60_000)
})

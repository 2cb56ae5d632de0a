import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"

/**
 * The auth lock in `chat` (context-engine seed): an `auth` stop locks the prompt; it unlocks by
 * itself when the apiKeyHelper's key changes, or with `/key`, without a restart. Keys never show.
 */

/** A helper that prints `bad-key` for its first `bad` runs, then `good-key`. */
const helperScript = (workspace: string, bad: number) => {
  Fs.writeFileSync(
    Path.join(workspace, "key.sh"),
    `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; if [ $n -le ${bad} ]; then echo bad-key; else echo good-key; fi\n`
  )
}

const setup = (bad: number) =>
  Effect.gen(function*() {
    const dirs = yield* cliDirs
    helperScript(dirs.workspace, bad)
    Fs.writeFileSync(Path.join(dirs.home, "settings.json"), JSON.stringify({ apiKeyHelper: "sh key.sh" }))
    const server = yield* MockModelServer.make({
      replies: [Reply.status(401, { body: JSON.stringify({ error: { type: "invalid_api_key", message: "Incorrect API key provided" } }) }), Reply.text("Hello with a key that works.")]
    })
    return { dirs, server, env: { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home } }
  })

const authorization = (request: MockModelServer.RecordedRequest) => request.headers["authorization"]

const promptsIn = (request: MockModelServer.RecordedRequest, text: string) => MockModelServer.userTexts(request).filter((t) => t === text).length

describe("chat's auth lock", () => {
  it.scopedLive("an apiKeyHelper that first prints a bad key, then a good one: the lock unlocks by itself and the retry carries the prompt once", () =>
    Effect.gen(function*() {
      // Run 1 at start, run 2 right after the 401 (still bad), run 3 by the lock's poll: good.
      const { dirs, env, server } = yield* setup(2)
      const result = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "hello\r" },
        { expect: "🔒 locked: mock-model via openai-chat refused the credentials\\. Fix the apiKeyHelper `sh key\\.sh`" },
        { expect: "the credentials changed: retrying" },
        { expect: "Hello with a key that works\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0)
      const requests = yield* server.requests
      assert.deepStrictEqual(requests.map(authorization), ["Bearer bad-key", "Bearer good-key"])
      // The retry re-runs the conversation: the prompt is in its history once, never sent again.
      assert.deepStrictEqual(requests.map((r) => promptsIn(r, "hello")), [1, 1])
      assert.notInclude(result.transcript, "good-key")
      assert.notInclude(result.transcript, "bad-key")
    }))

  it.scopedLive("/key reads a key without echo and unlocks for this process", () =>
    Effect.gen(function*() {
      const { dirs, env, server } = yield* setup(1_000)
      const result = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "hello\r" },
        { expect: "🔒 locked" },
        { send: "/key\r" },
        { expect: "not shown, kept for this process only" },
        { send: "typed-secret-key\r" },
        { expect: "key set for this process: retrying" },
        { expect: "Hello with a key that works\\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      const requests = yield* server.requests
      assert.deepStrictEqual(requests.map(authorization), ["Bearer bad-key", "Bearer typed-secret-key"])
      assert.strictEqual(promptsIn(requests[1]!, "hello"), 1)
      assert.notInclude(result.transcript, "typed-secret-key")
    }))

  it.scopedLive("with a key from the environment, Enter retries (the credentials read again), the prompt in the retried request once", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const server = yield* MockModelServer.make({ replies: [Reply.status(401), Reply.text("Accepted this time.")] })
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const result = yield* runInPty(["chat", "-w", dirs.workspace], [
        { expect: "new conversation" },
        { send: "hello\r" },
        { expect: "🔒 locked: mock-model via openai-chat refused the credentials\. Fix BATON_API_KEY" },
        { send: "something else\r" },
        { expect: "locked until the credentials are fixed" },
        { send: "\r" },
        { expect: "Accepted this time\." },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      const requests = yield* server.requests
      assert.strictEqual(requests.length, 2, "the typed line did not become a prompt while locked")
      assert.strictEqual(promptsIn(requests[1]!, "hello"), 1)
      assert.notInclude(requests[1]!.body, "something else")
    }))

  it.scopedLive("a helper that fails stops a command with exit 2, naming apiKeyHelper and not its output", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.home, "settings.json"), JSON.stringify({ apiKeyHelper: "echo leaked-secret; exit 3" }))
      const server = yield* MockModelServer.make({ replies: [] })
      const result = yield* runCli(["run", "-w", dirs.workspace, "hi"], { env: { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home } })
      assert.strictEqual(result.code, 2, result.stderr)
      assert.include(result.stderr, "apiKeyHelper")
      assert.include(result.stderr, "exit 3")
      assert.notInclude(result.stderr, "leaked-secret\n")
      assert.strictEqual((yield* server.requests).length, 0)
    }))
})

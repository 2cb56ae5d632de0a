import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply, userTexts } from "../support/MockModelServer.js"
import { runInPty } from "../support/ptyProcess.js"

/** Resolves once `name` appears in `dir` (inotify, no polling). */
const appears = (dir: string, name: string) =>
  new Promise<void>((resolve) => {
    const watcher = Fs.watch(dir, (_, file) => {
      if (file === name) {
        watcher.close()
        resolve()
      }
    })
    if (Fs.existsSync(Path.join(dir, name))) {
      watcher.close()
      resolve()
    }
  })

describe("baton chat: a line that loses the race with the end of a task", () => {
  it.scopedLive("typed while nothing can take steering (a /compact running), it is queued, shown as such, and becomes the next prompt", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      const summarizing = Path.join(dirs.workspace, "summarizing")
      // The summary is held until the pty driver touches `release`, after the line was typed.
      const summary = Reply.text("[summary]we said hi[/summary]", {}, { writes: [{ events: 0 }, { events: 100, after: appears(dirs.workspace, "release") }] })
      const server = yield* MockModelServer.make({ replies: [Reply.text("first answer"), summary, Reply.text("next answer")] })
      yield* server.awaitRequests(2).pipe(
        Effect.tap(() => Effect.sync(() => Fs.writeFileSync(summarizing, "2"))),
        Effect.forkScoped
      )
      const env = { ...server.childEnv("anthropic"), BATON_HOME: dirs.home }
      const result = yield* runInPty(["chat", "--workspace", dirs.workspace], [
        { expect: "new conversation" },
        { send: "hi\r" },
        { expect: "first answer" },
        { send: "/compact\r" },
        { wait_file: summarizing },
        { send: "what now?\r" },
        { expect: "queued as the next prompt: what now?" },
        { touch: Path.join(dirs.workspace, "release") },
        { expect: "next answer" },
        { send: "/exit\r" },
        { wait_exit: true }
      ], env)
      if (process.env["SHOW_PTY"] !== undefined) console.log(result.transcript)
      assert.isTrue(result.ok, `${result.reason}\n${result.transcript}`)
      assert.strictEqual(result.exit_code, 0)
      const requests = yield* server.requests
      assert.strictEqual(requests.length, 3)
      assert.include(userTexts(requests[2]!).at(-1) ?? "", "what now?", "the queued line is the next prompt")
      assert.notInclude(result.transcript, "send that again")
    }), 60_000)
})

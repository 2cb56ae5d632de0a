import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cliDirs, jsonEvents, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { byType } from "../support/sessionHarness.js"

/**
 * A denied call tells the model who denied it: a rule (named, with the settings file it is written
 * in), the user, or nobody at all (a run with no one to ask), so it stops retrying the same thing.
 */

const rmCall = Reply.toolCalls([{ id: "call_rm", name: "Bash", args: { command: "rm -rf build" } }])

const deniedRun = (args: ReadonlyArray<string>, settings?: { readonly home?: unknown; readonly workspace?: unknown }) =>
  Effect.gen(function*() {
    const model = yield* MockModelServer.make({ replies: [rmCall, Reply.text("Understood.")] })
    const dirs = yield* cliDirs
    if (settings?.workspace !== undefined) {
      Fs.mkdirSync(Path.join(dirs.workspace, ".baton"))
      Fs.writeFileSync(Path.join(dirs.workspace, ".baton", "settings.json"), JSON.stringify(settings.workspace))
    }
    if (settings?.home !== undefined) Fs.writeFileSync(Path.join(dirs.home, "settings.json"), JSON.stringify(settings.home))
    const env = { ...model.childEnv("openai-chat"), BATON_HOME: dirs.home }
    const result = yield* runCli(["run", "--json", ...args, "-w", dirs.workspace, "clean the build"], { env })
    assert.strictEqual(result.code, 0, result.stderr)
    const [returned] = byType(jsonEvents(result.stdout), "tool_return")
    assert.strictEqual(returned?.status, "denied")
    const requests = yield* model.requests
    assert.strictEqual(requests.length, 2)
    return { content: returned!.content, sent: requests[1]!.body, dirs }
  })

describe("a denial says who denied the call", () => {
  it.scopedLive("a rule's denial names the rule and the settings file it is written in", () =>
    Effect.gen(function*() {
      const workspace = yield* deniedRun(["--approve", "allow"], { workspace: { permissions: { deny: ["Bash(rm -rf:*)"] } } })
      assert.include(workspace.content, "denied by rule Bash(rm -rf:*) in .baton/settings.json")
      assert.include(workspace.sent, "denied by rule Bash(rm -rf:*) in .baton/settings.json", "the model hears it")
      const home = yield* deniedRun(["--approve", "allow"], { home: { permissions: { deny: ["Bash(rm:*)"] } } })
      assert.include(home.content, `denied by rule Bash(rm:*) in ${Path.join(home.dirs.home, "settings.json")}`)
    }))

  it.scopedLive("the user's denial (--approve deny) keeps the plain text", () =>
    Effect.gen(function*() {
      const { content } = yield* deniedRun(["--approve", "deny"])
      assert.strictEqual(content, "Tool call denied by user.")
    }))

  it.scopedLive("a run with no one to ask says so, and how such a call is allowed", () =>
    Effect.gen(function*() {
      const { content, sent } = yield* deniedRun([])
      assert.include(content, "Tool call denied: no one was there to approve it (a non-interactive run)")
      assert.include(content, "permissions.allow")
      assert.notInclude(content, "denied by user")
      assert.include(sent, "no one was there to approve it")
    }))
})

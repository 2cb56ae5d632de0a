import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { jsonEvents, runCli } from "../support/cliProcess.js"
import { byType } from "../support/sessionHarness.js"

/**
 * `baton demo` end to end through the built bin: the bundled cassette replays through the whole
 * stack (a fresh SQLite home, real tools in a fresh workspace, real shell commands), then the
 * conversation it leaves is read back with `baton sessions`.
 */

const demoRun = Effect.acquireRelease(
  Effect.gen(function*() {
    // No model configuration at all: the demo needs none.
    const result = yield* runCli(["demo"])
    const root = /\((\S+) is yours to delete\)/.exec(result.stdout)?.[1]
    return { result, root }
  }),
  ({ root }) => Effect.sync(() => root !== undefined && Fs.rmSync(root, { recursive: true, force: true }))
)

describe("baton demo (built CLI)", () => {
  it.scopedLive("fixes the template project with the recorded model and leaves an inspectable conversation", () =>
    Effect.gen(function*() {
      const { result, root } = yield* demoRun
      assert.strictEqual(result.code, 0, result.stdout + result.stderr)
      assert.isDefined(root)
      const out = result.stdout
      for (const marker of ["● Bash node test.js", "2 of 4 failed", "● Read src/slug.js", "● Edit src/slug.js", "all 4 passed", "✓ the task is done"]) {
        assert.include(out, marker)
      }
      // Each call is printed once, parallel ones included (the two Reads): five calls, five call lines.
      assert.lengthOf(out.match(/^● /gm) ?? [], 5, out)
      assert.match(out, /5 -     \.replace\(\/\[\^a-z0-9\]\/g, "-"\)\n\s+5 \+     \.replace\(\/\[\^a-z0-9\]\+\/g, "-"\)/, "the Edit is shown as a diff")
      const home = Path.join(root!, "home")
      const workspace = Path.join(root!, "workspace")
      execFileSync(process.execPath, ["test.js"], { cwd: workspace }) // throws unless the fix is really on disk
      const id = /conversation (conv-\S+)/.exec(out)?.[1]
      assert.isDefined(id)
      assert.include(out, `sessions show ${id} --home ${home}`)

      const shown = yield* runCli(["sessions", "show", id!, "--home", home])
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.include(shown.stdout, "› The tests in this project fail")
      assert.include(shown.stdout, "All four cases pass")

      const events = jsonEvents((yield* runCli(["sessions", "show", id!, "--home", home, "--json"])).stdout)
      assert.deepStrictEqual(byType(events, "tool_call").map((c) => c.name), ["Bash", "Read", "Read", "Edit", "Bash"])
      assert.deepStrictEqual(byType(events, "tool_return").map((r) => r.status), ["error", "success", "success", "success", "success"])
      assert.isTrue(byType(events, "approval_decision").every((d) => d.decision === "allow"))

      const listed = yield* runCli(["sessions", "list", "--home", home, "--json"])
      assert.deepStrictEqual(listed.stdout.trim().split("\n").map((l) => (JSON.parse(l) as { id: string }).id), [id])

      // The recording's requests are accounted under the demo model's name, not "unknown".
      const usage = yield* runCli(["usage", "--home", home, "--json"])
      assert.deepStrictEqual(
        (JSON.parse(usage.stdout) as { conversations: ReadonlyArray<{ model: string }> }).conversations.map((c) => c.model),
        ["baton-demo-recording"]
      )

      const out2 = Path.join(root!, "trace")
      const exported = yield* runCli(["sessions", "export", id!, "--home", home, "--out", out2])
      assert.strictEqual(exported.code, 0, exported.stderr)
      assert.deepStrictEqual(Fs.readdirSync(out2), ["trace_001.jsonl"])
      const trace = jsonEvents(Fs.readFileSync(Path.join(out2, "trace_001.jsonl"), "utf8"))
      assert.deepStrictEqual(byType(trace, "tool_call").length, 5)
    }))
})

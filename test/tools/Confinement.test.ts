import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { workspaceHarness } from "../support/Workspace.js"

describe("workspace confinement", () => {
  it.scoped("../x, /etc/passwd and a symlink pointing out are refused by every file tool", () =>
    Effect.gen(function*() {
      const { outside, run, workspace } = yield* workspaceHarness()
      Fs.writeFileSync(Path.join(outside, "secret.txt"), "outside\n")
      Fs.symlinkSync(outside, Path.join(workspace, "escape"))
      const attempts: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
        ["Read", { file_path: "../outside/secret.txt" }],
        ["Read", { file_path: "/etc/passwd" }],
        ["Read", { file_path: "escape/secret.txt" }],
        ["Write", { file_path: "../outside/new.txt", content: "x" }],
        ["Write", { file_path: "escape/new.txt", content: "x" }],
        ["Edit", { file_path: "/etc/passwd", old_string: "root", new_string: "toor" }],
        ["LS", { path: ".." }],
        ["LS", { path: "escape" }],
        ["Grep", { pattern: "outside", path: "../outside" }],
        ["Glob", { pattern: "*", path: "/etc" }]
      ]
      for (const [tool, args] of attempts) {
        const result = yield* run(tool, args)
        assert.strictEqual(result.status, "error", `${tool} ${JSON.stringify(args)}`)
        assert.include(result.output, "outside the workspace", `${tool} ${JSON.stringify(args)}`)
      }
      assert.include((yield* run("Read", { file_path: "escape/secret.txt" })).output, "(through a symlink)")
      assert.include((yield* run("Read", { file_path: "/etc/passwd" })).output, "permissions.additionalDirectories")
      assert.deepStrictEqual(Fs.readdirSync(outside), ["secret.txt"], "nothing was written outside")
    }))

  it.scoped("the same paths are allowed when a rule grants the directory", () =>
    Effect.gen(function*() {
      const { outside, run, workspace } = yield* workspaceHarness()
      Fs.writeFileSync(Path.join(outside, "secret.txt"), "outside\n")
      Fs.symlinkSync(outside, Path.join(workspace, "escape"))
      const grant = { allowedRoots: [outside] }
      assert.strictEqual((yield* run("Read", { file_path: "../outside/secret.txt" }, grant)).output, "     1\toutside")
      assert.strictEqual((yield* run("Read", { file_path: "escape/secret.txt" }, grant)).status, "success")
      assert.strictEqual((yield* run("Write", { file_path: "escape/new.txt", content: "hi\n" }, grant)).status, "success")
      assert.strictEqual(Fs.readFileSync(Path.join(outside, "new.txt"), "utf8"), "hi\n")
      assert.strictEqual(
        (yield* run("Grep", { pattern: "outside", path: "../outside" }, grant)).output,
        Path.join(outside, "secret.txt"),
        "paths outside the workspace are shown absolute"
      )
      const passwd = yield* run("Read", { file_path: "/etc/passwd", limit: 1 }, { allowedRoots: ["/etc"] })
      assert.strictEqual(passwd.status, "success")
    }))

  it.scoped("searches do not follow symlinks out of the workspace", () =>
    Effect.gen(function*() {
      const { outside, run, workspace, write } = yield* workspaceHarness()
      Fs.writeFileSync(Path.join(outside, "secret.txt"), "needle\n")
      Fs.symlinkSync(Path.join(outside, "secret.txt"), Path.join(workspace, "linked.txt"))
      Fs.symlinkSync(outside, Path.join(workspace, "linked-dir"))
      write("inside.txt", "needle\n")
      assert.strictEqual((yield* run("Grep", { pattern: "needle" })).output, "inside.txt")
      assert.strictEqual((yield* run("Glob", { pattern: "**/*.txt" })).output, "inside.txt")
      assert.strictEqual(
        (yield* run("Grep", { pattern: "needle" }, { allowedRoots: [outside] })).output,
        "inside.txt\nlinked.txt",
        "a granted target is searched under its link's name"
      )
    }))

  it.scoped("Bash is not confined by path (approval and the global lock gate it)", () =>
    Effect.gen(function*() {
      const { outside, run } = yield* workspaceHarness()
      Fs.writeFileSync(Path.join(outside, "secret.txt"), "outside\n")
      assert.strictEqual((yield* run("Bash", { command: "cat ../outside/secret.txt" })).output, "outside")
    }))
})

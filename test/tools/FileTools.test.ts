import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Otid } from "../../src/domain/Ids.js"
import { toToolReturn } from "../../src/domain/Tools.js"
import { makeFileView } from "../../src/services/ToolExecutor.js"
import { MAX_IMAGE_BYTES } from "../../src/services/tools/Read.js"
import { toolCall } from "../support/Calls.js"
import { workspaceHarness } from "../support/Workspace.js"

describe("Read", () => {
  it.scoped("returns numbered lines and pages with offset/limit", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      write("a.txt", "one\ntwo\r\nthree\nfour\n")
      const all = yield* run("Read", { file_path: "a.txt" })
      assert.strictEqual(all.status, "success")
      assert.strictEqual(all.output, "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour")
      const page = yield* run("Read", { file_path: "./a.txt", offset: 2, limit: 2 })
      assert.strictEqual(page.output, "     2\ttwo\n     3\tthree\n[showing lines 2-3 of 4; call Read with offset=4 to continue]")
      assert.include((yield* run("Read", { file_path: "a.txt", offset: 9 })).output, "offset 9 is past the end")
      write("empty.txt", "")
      assert.strictEqual((yield* run("Read", { file_path: "empty.txt" })).output, "(empty.txt is empty)")
    }))

  it.scoped("refuses missing files, directories and binary files with a clear message", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      const missing = yield* run("Read", { file_path: "nope.txt" })
      assert.deepStrictEqual([missing.status, missing.output], ["error", "File does not exist: nope.txt"])
      write("dir/x", "x")
      assert.include((yield* run("Read", { file_path: "dir" })).output, "dir is a directory; use LS")
      write("img.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0x0d, 0x0a]))
      const binary = yield* run("Read", { file_path: "img.png" })
      assert.strictEqual(binary.status, "error")
      assert.include(binary.output, "img.png is a binary file (7 bytes)")
    }))

  it.scoped("a PNG, JPEG, GIF or WebP (by content, not name) is returned as an image, within the size limit", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
      write("shot.png", png)
      const read = yield* run("Read", { file_path: "shot.png" })
      assert.strictEqual(read.status, "success")
      assert.strictEqual(read.output, "[image: shot.png, image/png, 16 bytes]")
      assert.deepStrictEqual(read.images, [{ media_type: "image/png", data: Buffer.from(png).toString("base64") }])
      const kinds: ReadonlyArray<readonly [string, ReadonlyArray<number>, string]> = [
        ["photo.dat", [0xff, 0xd8, 0xff, 0xe0, 0, 0x10], "image/jpeg"],
        ["anim.gif", [0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0], "image/gif"],
        ["pic.webp", [0x52, 0x49, 0x46, 0x46, 4, 0, 0, 0, 0x57, 0x45, 0x42, 0x50, 0], "image/webp"]
      ]
      for (const [name, bytes, type] of kinds) {
        write(name, new Uint8Array(bytes))
        assert.deepStrictEqual((yield* run("Read", { file_path: name })).images?.map((i) => i.media_type), [type], name)
      }
      const big = new Uint8Array(MAX_IMAGE_BYTES + 1)
      big.set(png)
      write("big.png", big)
      const tooBig = yield* run("Read", { file_path: "big.png" })
      assert.strictEqual(tooBig.status, "error")
      assert.include(tooBig.output, "more than the 5242880 bytes an image may have")
      assert.isUndefined(tooBig.images)
    }))

  it.scoped("bad arguments name the field", () =>
    Effect.gen(function*() {
      const { run } = yield* workspaceHarness()
      assert.include((yield* run("Read", { file_path: 7 })).output, "file_path: Expected string, actual 7")
      assert.include((yield* run("Read", { file_path: "a", offset: 0 })).output, "offset:")
      assert.include((yield* run("Read", "{\"file_path\": ")).output, "not valid JSON")
    }))

  it.scoped("a huge file stops at the line limit or the output limit, saying where to continue", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness({ limits: { outputChars: 5_000, readDefaultLines: 2_000 } })
      write("big.txt", Array.from({ length: 5_000 }, (_, i) => `line ${i + 1}`).join("\n"))
      const result = yield* run("Read", { file_path: "big.txt" })
      assert.isAtMost(result.output.length, 5_000)
      const next = /call Read with offset=(\d+) to continue/.exec(result.output)
      assert.isNotNull(next)
      const nextLine = Number(next![1])
      assert.include(result.output, `line ${nextLine - 1}\n`)
      const rest = yield* run("Read", { file_path: "big.txt", offset: nextLine, limit: 1 })
      assert.include(rest.output, `${nextLine}\tline ${nextLine}\n`)
      write("wide.txt", "x".repeat(10_000))
      assert.include((yield* run("Read", { file_path: "wide.txt" })).output, "… [line truncated]")
    }))
})

describe("Write", () => {
  it.scoped("creates parent directories; overwriting needs a prior Read", () =>
    Effect.gen(function*() {
      const { read, run, workspace, write } = yield* workspaceHarness()
      const created = yield* run("Write", { file_path: "deep/er/new.ts", content: "export {}\n" })
      assert.deepStrictEqual([created.status, created.output], ["success", "Created deep/er/new.ts (1 lines)"])
      assert.strictEqual(read("deep/er/new.ts"), "export {}\n")
      write("script.sh", "echo old\n")
      Fs.chmodSync(Path.join(workspace, "script.sh"), 0o755)
      const blind = yield* run("Write", { file_path: "script.sh", content: "echo new\n" })
      assert.strictEqual(blind.status, "error")
      assert.include(blind.output, "has not been read in this conversation yet; Read it first")
      assert.strictEqual(read("script.sh"), "echo old\n")
      yield* run("Read", { file_path: "script.sh" })
      assert.strictEqual((yield* run("Write", { file_path: "script.sh", content: "echo new\n" })).status, "success")
      assert.strictEqual(read("script.sh"), "echo new\n")
      assert.strictEqual(Fs.statSync(Path.join(workspace, "script.sh")).mode & 0o777, 0o755, "mode kept")
      assert.deepStrictEqual(Fs.readdirSync(workspace).filter((n) => n.includes(".baton-")), [], "no temp files left")
    }))

  it.scoped("an interrupted Write leaves the old or the new content, never half a file", () =>
    Effect.gen(function*() {
      const { executor, read, run, workspace, write } = yield* workspaceHarness()
      write("big.txt", "old\n")
      yield* run("Read", { file_path: "big.txt" })
      const content = "n".repeat(20 * 1024 * 1024)
      const scope = yield* Scope.make()
      const fiber = yield* Scope.extend(executor.start(toolCall("w", "Write", { file_path: "big.txt", content })), scope)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(fiber)
      yield* Scope.close(scope, Exit.void)
      const after = read("big.txt")
      assert.isTrue(after === "old\n" || after === content, `partial file of ${after.length} chars`)
      assert.deepStrictEqual(Fs.readdirSync(workspace).filter((n) => n.includes(".baton-")), [])
    }))
})

describe("Edit", () => {
  it.scoped("replaces a unique match and shows the result", () =>
    Effect.gen(function*() {
      const { read, run, write } = yield* workspaceHarness()
      write("a.ts", "const a = 1\nconst b = 2\nconst c = 3\n")
      yield* run("Read", { file_path: "a.ts" })
      const result = yield* run("Edit", { file_path: "a.ts", old_string: "b = 2", new_string: "b = \"$&\"" })
      assert.strictEqual(result.status, "success")
      assert.include(result.output, "Edited a.ts: 1 replacement")
      assert.include(result.output, "     2\tconst b = \"$&\"")
      assert.strictEqual(read("a.ts"), "const a = 1\nconst b = \"$&\"\nconst c = 3\n")
      // Its own write counts as seen: a second Edit needs no new Read.
      assert.strictEqual((yield* run("Edit", { file_path: "a.ts", old_string: "c = 3", new_string: "c = 4" })).status, "success")
    }))

  it.scoped("a non-unique match fails unless replace_all; a missing match fails", () =>
    Effect.gen(function*() {
      const { read, run, write } = yield* workspaceHarness()
      write("a.txt", "x y x y x\n")
      yield* run("Read", { file_path: "a.txt" })
      const ambiguous = yield* run("Edit", { file_path: "a.txt", old_string: "x", new_string: "z" })
      assert.strictEqual(ambiguous.status, "error")
      assert.include(ambiguous.output, "old_string occurs 3 times in a.txt")
      assert.strictEqual(read("a.txt"), "x y x y x\n")
      const all = yield* run("Edit", { file_path: "a.txt", old_string: "x", new_string: "z", replace_all: true })
      assert.include(all.output, "3 replacements")
      assert.strictEqual(read("a.txt"), "z y z y z\n")
      const absent = yield* run("Edit", { file_path: "a.txt", old_string: "q", new_string: "r" })
      assert.include(absent.output, "old_string was not found in a.txt")
      const same = yield* run("Edit", { file_path: "a.txt", old_string: "y", new_string: "y" })
      assert.include(same.output, "identical")
    }))

  it.scoped("refuses a file never read, or changed on disk since it was read", () =>
    Effect.gen(function*() {
      const { read, run, write } = yield* workspaceHarness()
      write("a.txt", "v1\n")
      const unseen = yield* run("Edit", { file_path: "a.txt", old_string: "v1", new_string: "v2" })
      assert.include(unseen.output, "has not been read in this conversation yet; Read it first")
      yield* run("Read", { file_path: "a.txt" })
      write("a.txt", "v1 changed by the user\n")
      const stale = yield* run("Edit", { file_path: "a.txt", old_string: "v1", new_string: "v2" })
      assert.strictEqual(stale.status, "error")
      assert.include(stale.output, "has changed on disk since it was last read")
      assert.strictEqual(read("a.txt"), "v1 changed by the user\n")
      yield* run("Read", { file_path: "a.txt" })
      assert.strictEqual((yield* run("Edit", { file_path: "a.txt", old_string: "v1", new_string: "v2" })).status, "success")
    }))

  it.scoped("what a call showed of a file rides on its result, and each conversation's view is its own", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      write("a.txt", "one\ntwo\nthree\n")
      const sha = (text: string) => Crypto.createHash("sha256").update(text).digest("hex")
      const mine = makeFileView()
      const theirs = makeFileView()
      const partial = yield* run("Read", { file_path: "a.txt", offset: 2, limit: 1 }, { files: mine })
      assert.deepStrictEqual(partial.files, { "a.txt": { sha256: sha("one\ntwo\nthree\n"), lines: { from: 2, to: 2 } } })
      assert.notProperty(partial, "lines")
      // The other conversation never read it: refused there, while this one may edit.
      const blind = yield* run("Edit", { file_path: "a.txt", old_string: "two", new_string: "2" }, { files: theirs })
      assert.include(blind.output, "has not been read in this conversation yet")
      const edited = yield* run("Edit", { file_path: "a.txt", old_string: "two", new_string: "2" }, { files: mine })
      assert.strictEqual(edited.status, "success")
      assert.deepStrictEqual(edited.files, { "a.txt": { sha256: sha("one\n2\nthree\n") } })
      // A view rebuilt from those results alone (a new process) allows the next Edit.
      const rebuilt = makeFileView()
      rebuilt.observe([toToolReturn(partial, Otid.make("o1")), toToolReturn(edited, Otid.make("o2"))])
      assert.strictEqual((yield* run("Edit", { file_path: "a.txt", old_string: "three", new_string: "3" }, { files: rebuilt })).status, "success")
      assert.isUndefined(blind.files)
    }))

  it.scoped("a missing file: error, unless old_string is empty (then Edit creates it)", () =>
    Effect.gen(function*() {
      const { read, run, write } = yield* workspaceHarness()
      const missing = yield* run("Edit", { file_path: "new.txt", old_string: "a", new_string: "b" })
      assert.include(missing.output, "File does not exist: new.txt. Use Write")
      const created = yield* run("Edit", { file_path: "sub/new.txt", old_string: "", new_string: "hello\n" })
      assert.strictEqual(created.status, "success")
      assert.strictEqual(read("sub/new.txt"), "hello\n")
      write("bin.dat", new Uint8Array([1, 0, 2]))
      assert.include((yield* run("Edit", { file_path: "bin.dat", old_string: "a", new_string: "b" })).output, "binary file")
      assert.include((yield* run("Edit", { file_path: "x", old_string: "a" })).output, "new_string: is missing")
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { workspaceHarness } from "../support/Workspace.js"

const tree = (write: (p: string, c: string | Uint8Array) => string) => {
  write("src/a.ts", "export const Alpha = 1\nconst beta = 2\n")
  write("src/deep/b.ts", "import { Alpha } from '../../a'\nalpha()\n")
  write("src/c.md", "Alpha in prose\n")
  write("node_modules/pkg/index.ts", "Alpha\n")
  write(".git/HEAD", "Alpha\n")
  write("bin.dat", new Uint8Array([0x41, 0x6c, 0x70, 0x68, 0x61, 0x00]))
}

describe("Grep", () => {
  it.scoped("lists matching files, skipping .git, node_modules and binary files", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      tree(write)
      const files = yield* run("Grep", { pattern: "Alpha" })
      assert.strictEqual(files.status, "success")
      assert.strictEqual(files.output, "src/a.ts\nsrc/c.md\nsrc/deep/b.ts")
      const content = yield* run("Grep", { pattern: "^[a-z]+\\(", output_mode: "content" })
      assert.strictEqual(content.output, "src/deep/b.ts:2:alpha()")
      const counts = yield* run("Grep", { pattern: "alpha", case_insensitive: true, output_mode: "count", path: "src" })
      assert.strictEqual(counts.output, "src/a.ts:1\nsrc/c.md:1\nsrc/deep/b.ts:2")
    }))

  it.scoped("filters by glob, on names or on paths", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      tree(write)
      assert.strictEqual((yield* run("Grep", { pattern: "Alpha", glob: "*.ts" })).output, "src/a.ts\nsrc/deep/b.ts")
      assert.strictEqual((yield* run("Grep", { pattern: "Alpha", glob: "src/*/*.ts" })).output, "src/deep/b.ts")
      assert.strictEqual((yield* run("Grep", { pattern: "Alpha", path: "src/a.ts" })).output, "src/a.ts")
      assert.strictEqual((yield* run("Grep", { pattern: "nothing-like-this" })).output, "No matches found")
    }))

  it.scoped("max_results cuts the list and says so; bad input is an error result", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      write("many.txt", Array.from({ length: 50 }, (_, i) => `hit ${i}`).join("\n"))
      const limited = yield* run("Grep", { pattern: "hit", output_mode: "content", max_results: 5 })
      assert.strictEqual(limited.output.split("\n").length, 6)
      assert.include(limited.output, "[results limited to max_results=5")
      const badRegex = yield* run("Grep", { pattern: "(unclosed" })
      assert.strictEqual(badRegex.status, "error")
      assert.include(badRegex.output, "invalid regular expression")
      assert.include((yield* run("Grep", { pattern: "x", path: "missing" })).output, "missing does not exist")
      assert.include((yield* run("Grep", { pattern: "x", output_mode: "lines" })).output, "output_mode:")
    }))
})

describe("Glob", () => {
  it.scoped("finds paths by pattern, newest first", () =>
    Effect.gen(function*() {
      const { run, workspace, write } = yield* workspaceHarness()
      tree(write)
      const set = (rel: string, seconds: number) => Fs.utimesSync(Path.join(workspace, rel), seconds, seconds)
      set("src/a.ts", 1_000)
      set("src/deep/b.ts", 3_000)
      set("src/c.md", 2_000)
      assert.strictEqual((yield* run("Glob", { pattern: "**/*.ts" })).output, "src/deep/b.ts\nsrc/a.ts")
      assert.strictEqual((yield* run("Glob", { pattern: "**/*" , path: "src" })).output, "src/deep/b.ts\nsrc/c.md\nsrc/a.ts")
      assert.strictEqual((yield* run("Glob", { pattern: "*.{md,ts}", path: "src" })).output, "src/c.md\nsrc/a.ts")
      assert.strictEqual((yield* run("Glob", { pattern: "*.py" })).output, "No files found")
      assert.include((yield* run("Glob", { pattern: "*", path: "nope" })).output, "nope does not exist")
    }))
})

describe("result caps", () => {
  it.scoped("Glob and LS stop at 1000 entries and say how many were left out", () =>
    Effect.gen(function*() {
      const { run, write } = yield* workspaceHarness()
      for (let i = 0; i < 1_050; i++) write(`many/f${String(i).padStart(4, "0")}.txt`, "")
      const glob = yield* run("Glob", { pattern: "many/*.txt" })
      assert.strictEqual(glob.output.split("\n").length, 1_001)
      assert.match(glob.output, /\[50 more files not shown; use a narrower pattern or path\]$/)
      const ls = yield* run("LS", { path: "many" })
      assert.match(ls.output, /\[50 more entries not shown; use Glob with a narrower pattern\]$/)
    }))
})

describe("LS", () => {
  it.scoped("lists one directory with markers for directories and symlinks", () =>
    Effect.gen(function*() {
      const { run, workspace, write } = yield* workspaceHarness()
      tree(write)
      Fs.symlinkSync("src/a.ts", Path.join(workspace, "link.ts"))
      assert.strictEqual(
        (yield* run("LS", {})).output,
        "./\n.git/\nbin.dat\nlink.ts -> src/a.ts\nnode_modules/\nsrc/"
      )
      assert.strictEqual((yield* run("LS", { path: "src", ignore: ["*.md"] })).output, "src/\na.ts\ndeep/")
      assert.strictEqual((yield* run("LS", "")).status, "success", "empty arguments mean {}")
      assert.include((yield* run("LS", { path: "src/a.ts" })).output, "is a file, not a directory")
      assert.include((yield* run("LS", { path: "gone" })).output, "gone does not exist")
    }))
})

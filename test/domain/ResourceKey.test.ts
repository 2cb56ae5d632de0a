import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Confinement, ResourceKey, resourceKey } from "../../src/domain/ResourceKey.js"
import { realpathLongestPrefix } from "../../src/services/tools/Workspace.js"

const pure: Confinement = { workspace: "/ws" }
const key = (tool: string, args: unknown, c: Confinement = pure) => resourceKey(tool, args, c)

describe("resourceKey (pure)", () => {
  it("read-only tools share, shell and unknown tools are global", () => {
    assert.deepStrictEqual(key("Read", { file_path: "a.ts" }), Either.right(ResourceKey.Shared()))
    assert.deepStrictEqual(key("Grep", { pattern: "x" }), Either.right(ResourceKey.Shared()))
    assert.deepStrictEqual(key("Glob", { pattern: "*" }), Either.right(ResourceKey.Shared()))
    assert.deepStrictEqual(key("LS", {}), Either.right(ResourceKey.Shared()))
    assert.deepStrictEqual(key("Bash", { command: "ls" }), Either.right(ResourceKey.Global()))
    assert.deepStrictEqual(key("Mystery", { file_path: "a" }), Either.right(ResourceKey.Global()))
  })

  it("file writers lock one normalized absolute path", () => {
    const expected = Either.right(ResourceKey.File({ path: "/ws/src/a.ts" }))
    for (const spelling of ["src/a.ts", "./src/a.ts", "src/./a.ts", "src/x/../a.ts", "/ws/src/a.ts", "/ws//src/a.ts"]) {
      assert.deepStrictEqual(key("Edit", { file_path: spelling }), expected, spelling)
    }
    assert.deepStrictEqual(key("Write", { file_path: "dir/" }), Either.right(ResourceKey.File({ path: "/ws/dir" })))
  })

  it("a writer without a usable path takes the global lock", () => {
    assert.deepStrictEqual(key("Edit", {}), Either.right(ResourceKey.Global()))
    assert.deepStrictEqual(key("Write", "garbage"), Either.right(ResourceKey.Global()))
  })

  it("paths outside the workspace are a typed error, unless a rule grants the directory", () => {
    for (const outside of ["../x", "/etc/passwd", "src/../../x"]) {
      const result = key("Edit", { file_path: outside })
      assert.isTrue(Either.isLeft(result), outside)
      if (Either.isLeft(result)) {
        assert.strictEqual(result.left._tag, "PathOutsideWorkspace")
        assert.include(result.left.message, "outside the workspace")
      }
    }
    assert.isTrue(Either.isLeft(key("Read", { file_path: "/etc/passwd" })))
    assert.deepStrictEqual(
      key("Edit", { file_path: "/etc/hosts" }, { workspace: "/ws", allowedRoots: ["/etc"] }),
      Either.right(ResourceKey.File({ path: "/etc/hosts" }))
    )
  })
})

describe("resourceKey with symlinks (real files)", () => {
  it("two spellings of one file through a symlink get one key; a link pointing out is refused", () => {
    const root = Fs.realpathSync(Fs.mkdtempSync(Path.join(Os.tmpdir(), "baton-rk-")))
    const ws = Path.join(root, "ws")
    const outside = Path.join(root, "outside")
    Fs.mkdirSync(Path.join(ws, "real"), { recursive: true })
    Fs.mkdirSync(outside)
    Fs.writeFileSync(Path.join(ws, "real", "f.txt"), "x")
    Fs.symlinkSync(Path.join(ws, "real"), Path.join(ws, "alias"))
    Fs.symlinkSync(outside, Path.join(ws, "escape"))
    const c: Confinement = { workspace: ws, realpath: realpathLongestPrefix }
    const expected = Either.right(ResourceKey.File({ path: Path.join(ws, "real", "f.txt") }))
    assert.deepStrictEqual(key("Edit", { file_path: "alias/f.txt" }, c), expected)
    assert.deepStrictEqual(key("Edit", { file_path: "real/f.txt" }, c), expected)
    assert.deepStrictEqual(
      key("Write", { file_path: "alias/new/g.txt" }, c),
      Either.right(ResourceKey.File({ path: Path.join(ws, "real", "new", "g.txt") }))
    )
    const escaped = key("Write", { file_path: "escape/x.txt" }, c)
    assert.isTrue(Either.isLeft(escaped))
    if (Either.isLeft(escaped)) assert.include(escaped.left.message, "symlink")
    Fs.rmSync(root, { recursive: true, force: true })
  })
})

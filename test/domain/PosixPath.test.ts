import { assert, describe, it } from "@effect/vitest"
import * as NodePath from "node:path"
import * as PosixPath from "../../src/domain/PosixPath.js"

// A small seeded generator: the same 2,000 cases on every run, so a failure reproduces.
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return seed / 2 ** 31
}
const SEGMENTS = ["a", "b", "src", "..", ".", "", "x.ts", "..a", "a..", "deep"]

describe("PosixPath", () => {
  it("answers as node:path does for absolute bases (resolve, relative, isAbsolute)", () => {
    const next = random(42)
    const path = (absolute: boolean) => {
      const parts = Array.from({ length: 1 + Math.floor(next() * 5) }, () => SEGMENTS[Math.floor(next() * SEGMENTS.length)]!)
      return (absolute ? "/" : "") + parts.join("/")
    }
    for (let i = 0; i < 2_000; i++) {
      const base = NodePath.posix.resolve(path(true))
      const raw = path(next() < 0.3)
      assert.strictEqual(PosixPath.resolve(base, raw), NodePath.posix.resolve(base, raw), `resolve(${base}, ${raw})`)
      const other = NodePath.posix.resolve(path(true))
      assert.strictEqual(PosixPath.relative(base, other), NodePath.posix.relative(base, other), `relative(${base}, ${other})`)
      assert.strictEqual(PosixPath.isAbsolute(raw), NodePath.posix.isAbsolute(raw))
    }
  })

  it("never climbs above the root", () => {
    assert.strictEqual(PosixPath.resolve("/ws", "../../../etc/passwd"), "/etc/passwd")
    assert.strictEqual(PosixPath.relative("/ws/a", "/"), "../..")
    assert.strictEqual(PosixPath.relative("/ws", "/ws"), "")
  })
})

import { assert, describe, it } from "@effect/vitest"
import { matchesGlob } from "../../src/domain/Glob.js"

describe("Glob", () => {
  const cases: ReadonlyArray<readonly [string, string, boolean]> = [
    ["src/**", "src/a.ts", true],
    ["src/**", "src/a/b/c.ts", true],
    ["src/**", "srcx/a.ts", false],
    ["src/*.ts", "src/a.ts", true],
    ["src/*.ts", "src/a/b.ts", false],
    ["**/*.ts", "a.ts", true],
    ["**/*.ts", "x/y/a.ts", true],
    ["**/*.ts", "x/y/a.tsx", false],
    ["*.{ts,js}", "a.js", true],
    ["*.{ts,js}", "a.py", false],
    ["a?c", "abc", true],
    ["a?c", "a/c", false],
    ["[ab].txt", "b.txt", true],
    ["[!ab].txt", "b.txt", false],
    ["a.b", "axb", false],
    ["src/**/test/*.ts", "src/test/a.ts", true],
    ["src/**/test/*.ts", "src/x/y/test/a.ts", true]
  ]
  for (const [pattern, path, expected] of cases) {
    it(`${pattern} ${expected ? "matches" : "does not match"} ${path}`, () => {
      assert.strictEqual(matchesGlob(pattern, path), expected)
    })
  }
})

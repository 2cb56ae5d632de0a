import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

const src = Path.join(import.meta.dirname, "..", "..", "src")

/** Every module reachable from `entry` through relative imports (type-only imports included). */
const reachable = (entry: string): ReadonlySet<string> => {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const text = Fs.readFileSync(file, "utf8")
    for (const m of text.matchAll(/^(?:import|export)[^"']*from\s+["'](\.[^"']+)["']/gm)) {
      visit(Path.resolve(Path.dirname(file), m[1]!.replace(/\.js$/, ".ts")))
    }
  }
  visit(entry)
  return seen
}

describe("Session dependencies", () => {
  it("the Session reaches the model and the store only through the Backend", () => {
    const modules = [...reachable(Path.join(src, "programs", "session", "Session.ts"))].map((f) => Path.relative(src, f))
    const forbidden = modules.filter((m) => /^(services\/(Provider|Store)\.ts|services\/(provider|store)\/|programs\/backend\/)/.test(m))
    assert.deepStrictEqual(forbidden, [])
    assert.include(modules, "services/Backend.ts")
    assert.include(modules, "services/ToolExecutor.ts")
  })
})

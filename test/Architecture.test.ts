import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * The dependency rules of DESIGN "Layout", read off the import statements of every module:
 * domain ← services ← programs, the two sides of the protocol apart from the CLI, the server and
 * each other, adapter families apart from each other except through a port, and benchmarks apart
 * from the tests. A rule broken on purpose fails here with the offending file and import.
 */

const ROOT = Path.join(import.meta.dirname, "..")

interface Import {
  /** Relative to the project root, e.g. `src/services/Store.ts`. */
  readonly from: string
  /** A package name (`effect`, `node:fs`) or a project file relative to the root. */
  readonly to: string
  /** `import type` / `export type`: erased when compiled, so no module is loaded for it. */
  readonly typeOnly?: boolean
}

const sources = (dir: string): ReadonlyArray<string> =>
  Fs.readdirSync(Path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(Path.join(dir, entry.name))
      : entry.name.endsWith(".ts") ? [Path.join(dir, entry.name)] : []
  )

// Static imports and re-exports (type-only ones too: a type dependency is a dependency), and import().
const SPECIFIER = /^\s*(?:import|export)\b[^"'`;]*?\bfrom\s*["']([^"']+)["']|^\s*import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/gm

export const importsOf = (file: string, text: string): ReadonlyArray<Import> =>
  [...text.matchAll(SPECIFIER)].map((m) => {
    const spec = (m[1] ?? m[2] ?? m[3])!
    const typeOnly = /^\s*(?:import|export)\s+type\b/.test(m[0])
    if (!spec.startsWith(".")) return { from: file, to: spec, typeOnly }
    return { from: file, to: Path.normalize(Path.join(Path.dirname(file), spec)).replace(/\.js$/, ".ts"), typeOnly }
  })

const graph = (dirs: ReadonlyArray<string>): ReadonlyArray<Import> =>
  dirs.flatMap(sources).flatMap((file) => importsOf(file, Fs.readFileSync(Path.join(ROOT, file), "utf8")))

/** `src/services/store/sqlite/Open.ts` → `store`; a top-level service module (a port, a shared helper) has none. */
const familyOf = (file: string): string | undefined => {
  const parts = file.split(Path.sep)
  return parts[0] === "src" && parts[1] === "services" && parts.length > 3 ? parts[2] : undefined
}

const under = (file: string, dir: string) => file.startsWith(dir + Path.sep)

export interface Rule {
  readonly name: string
  readonly broken: (i: Import) => boolean
}

export const rules: ReadonlyArray<Rule> = [
  {
    name: "src/domain imports only effect and other domain modules",
    broken: (i) => under(i.from, "src/domain") && !(i.to === "effect" || i.to.startsWith("effect/") || under(i.to, "src/domain"))
  },
  {
    name: "src/services never imports src/programs",
    broken: (i) => under(i.from, "src/services") && under(i.to, "src/programs")
  },
  {
    name: "programs/backend and programs/session never import programs/cli, programs/server or programs/web",
    broken: (i) =>
      (under(i.from, "src/programs/backend") || under(i.from, "src/programs/session")) &&
      ["cli", "server", "web"].some((side) => under(i.to, `src/programs/${side}`))
  },
  {
    name: "programs/session reaches the backend only through the Backend port, and programs/backend never imports the client side",
    broken: (i) =>
      (under(i.from, "src/programs/session") && under(i.to, "src/programs/backend")) ||
      (under(i.from, "src/programs/backend") && under(i.to, "src/programs/session"))
  },
  {
    name: "an adapter family reaches another only through its port module",
    broken: (i) => {
      const from = familyOf(i.from)
      const to = familyOf(i.to)
      return from !== undefined && to !== undefined && from !== to
    }
  },
  {
    name: "adapters are chosen by the composition root: programs/backend, programs/session and programs/web import ports, never an adapter",
    broken: (i) =>
      ["backend", "session", "web"].some((side) => under(i.from, `src/programs/${side}`)) && familyOf(i.to) !== undefined &&
      // The page's API speaks baton serve's wire format (one HTTP stack): its errors and the SSE
      // documentation are definitions it shares, not an adapter it picks.
      !(under(i.from, "src/programs/web") && HTTP_WIRE.has(i.to))
  },
  {
    name: "bench/ does not import test/",
    broken: (i) => under(i.from, "bench") && under(i.to, "test")
  }
]

const HTTP_WIRE = new Set(["src/services/backend/HttpApi.ts", "src/services/backend/HttpErrors.ts"])

export const violations = (imports: ReadonlyArray<Import>): ReadonlyArray<string> =>
  rules.flatMap((rule) => imports.filter(rule.broken).map((i) => `${rule.name}: ${i.from} → ${i.to}`))

/**
 * The import cycles among project modules, each as its modules in order: modules that load each
 * other (a lazy `import()` counts; a type-only import does not, it is erased). Depth-first search
 * with colours; each cycle is reported once, from the module where it was closed.
 */
export const cycles = (imports: ReadonlyArray<Import>): ReadonlyArray<ReadonlyArray<string>> => {
  const edges = new Map<string, Array<string>>()
  for (const i of imports) if (i.to.endsWith(".ts") && i.typeOnly !== true) edges.set(i.from, [...(edges.get(i.from) ?? []), i.to])
  const state = new Map<string, "open" | "done">()
  const path: Array<string> = []
  const found: Array<ReadonlyArray<string>> = []
  const visit = (file: string): void => {
    state.set(file, "open")
    path.push(file)
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === "open") found.push(path.slice(path.indexOf(next)))
      else if (state.get(next) === undefined) visit(next)
    }
    path.pop()
    state.set(file, "done")
  }
  for (const file of [...edges.keys()].sort()) if (state.get(file) === undefined) visit(file)
  return found
}

describe("architecture", () => {
  const imports = graph(["src", "bench"])

  it("the import graph was read (every module, every kind of import)", () => {
    // The rules are only as good as the parser: make sure it sees what the code imports.
    assert.isAbove(imports.length, 500)
    assert.isTrue(imports.some((i) => i.from === Path.join("src", "Cli.ts") && i.to === Path.join("src", "programs", "cli", "Commands.ts")))
    assert.isTrue(imports.some((i) => i.to === "effect"))
  })

  it("every dependency points the way DESIGN's layout says", () => {
    assert.deepStrictEqual(violations(imports), [])
  })

  it("no module imports itself through others (no import cycles)", () => {
    assert.deepStrictEqual(cycles(imports).map((cycle) => cycle.join(" → ")), [])
  })

  it("a cycle is found, however long", () => {
    const a = Path.normalize("src/programs/backend/A.ts")
    const b = Path.normalize("src/programs/backend/B.ts")
    const c = Path.normalize("src/programs/backend/C.ts")
    assert.deepStrictEqual(cycles([{ from: a, to: b }, { from: b, to: c }, { from: c, to: a }]), [[a, b, c]])
    assert.deepStrictEqual(cycles([{ from: a, to: b }, { from: b, to: c }, { from: a, to: c }]), [])
    assert.deepStrictEqual(cycles([{ from: a, to: b }, { from: b, to: a, typeOnly: true }]), [])
    assert.isTrue(importsOf(a, `import type { X } from "./B.js"\nimport { type Y, z } from "./C.js"`).map((i) => i.typeOnly).join() === "true,false")
  })

  it("each rule catches its own breach", () => {
    const breaches: ReadonlyArray<Import> = [
      { from: "src/domain/Recovery.ts", to: "src/services/Store.ts" },
      { from: "src/domain/Recovery.ts", to: "node:fs" },
      { from: "src/services/store/Memory.ts", to: "src/programs/backend/RunLog.ts" },
      { from: "src/programs/session/Task.ts", to: "src/programs/cli/view/Style.ts" },
      { from: "src/programs/backend/Run.ts", to: "src/programs/server/Server.ts" },
      { from: "src/programs/session/Session.ts", to: "src/programs/backend/BackendLocal.ts" },
      { from: "src/services/backend/Remote.ts", to: "src/services/provider/WireDecoder.ts" },
      { from: "bench/store.ts", to: "test/support/testing.ts" },
      { from: "src/programs/backend/BackendCluster.ts", to: "src/services/store/Pg.ts" }
    ].map((i) => ({ from: Path.normalize(i.from), to: Path.normalize(i.to) }))
    for (const breach of breaches) assert.lengthOf(violations([breach]), 1, `${breach.from} → ${breach.to}`)
    // Allowed: an adapter through a port or a shared top-level service module, a program providing a port.
    const allowed: ReadonlyArray<Import> = [
      { from: "src/services/store/Memory.ts", to: "src/services/Store.ts" },
      { from: "src/services/backend/Remote.ts", to: "src/services/Sse.ts" },
      { from: "src/programs/backend/BackendLocal.ts", to: "src/services/Store.ts" },
      { from: "src/programs/cli/Layers.ts", to: "src/programs/backend/BackendLocal.ts" }
    ].map((i) => ({ from: Path.normalize(i.from), to: Path.normalize(i.to) }))
    assert.deepStrictEqual(violations(allowed), [])
  })

  it("src/domain is pure: no process, clock or randomness", () => {
    const code = (file: string) => Fs.readFileSync(Path.join(ROOT, file), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "")
    const impure = sources("src/domain").filter((file) => /\bprocess\.|\bDate\.now\(|Math\.random\(|new Date\(\)/.test(code(file)))
    assert.deepStrictEqual(impure, [])
  })
})

import { assert, describe, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ROOT } from "../support/cliProcess.js"

/**
 * Start-up loads only what the command needs (DESIGN "The hot path"): the bundle a task command
 * loads (the Commands chunk and everything it imports statically) leaves out the server (its router
 * and the /docs page are most of the bundle), the remote client, the interactive views and the
 * OpenTelemetry exporter, which load on first use. Checked on the built bin (vitest's global setup builds it).
 */

const chunks = Path.join(ROOT, "dist", "bin", "chunks")

const staticImports = (code: string): ReadonlyArray<string> =>
  [...code.matchAll(/(?:^|[;}\s])import\s*(?:[\w${},\s*]+from\s*)?"\.\/([\w-]+\.js)"/g)].map((m) => m[1]!)

const closure = (entry: string): ReadonlySet<string> => {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const next of staticImports(Fs.readFileSync(Path.join(chunks, file), "utf8"))) visit(next)
  }
  visit(entry)
  return seen
}

describe("what `baton run` loads", () => {
  it("the task commands' static graph has no server, no remote client, no chat view and no OTLP exporter; those load on demand", () => {
    const commands = Fs.readdirSync(chunks).find((f) => /^Commands-[\w]+\.js$/.test(f))
    assert.isDefined(commands)
    const loaded = closure(commands!)
    const code = [...loaded].map((file) => Fs.readFileSync(Path.join(chunks, file), "utf8")).join("\n")
    // The core is there (sanity), each left-out part is recognised by text only it contains.
    assert.include(code, "could not switch to WAL mode")
    assert.notInclude(code, "swagger-ui", "the server's /docs page")
    assert.notInclude(code, "cannot reach the Baton server at", "the remote client")
    assert.notInclude(code, "press Ctrl-C again to leave", "the chat view")
    assert.notInclude(code, "effect-opentelemetry-", "the OTLP exporter (loaded only when OTEL_* asks for it)")
    const all = Fs.readdirSync(chunks).filter((f) => f.endsWith(".js")).map((f) => Fs.readFileSync(Path.join(chunks, f), "utf8")).join("\n")
    for (const text of ["swagger-ui", "cannot reach the Baton server at", "press Ctrl-C again to leave", "effect-opentelemetry-"]) assert.include(all, text)
  })
})

import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { cleanEnv, cliDirs, ROOT } from "./support/cliProcess.js"
import * as MockModelServer from "./support/MockModelServer.js"
import { Reply } from "./support/MockModelServer.js"

/**
 * The library surface: package.json `exports`, used the way another Effect program uses it. The
 * README's embedding example is examples/embed.ts verbatim; `npm test` typechecks it (tsc) and this
 * suite runs it, resolving `baton/...` through the real exports map to the built modules.
 */

const pkg = JSON.parse(Fs.readFileSync(Path.join(ROOT, "package.json"), "utf8")) as {
  readonly exports: Record<string, string | Record<string, string>>
}
const example = Fs.readFileSync(Path.join(ROOT, "examples", "embed.ts"), "utf8")

describe("embedding Baton (package exports)", () => {
  it("the README's embedding example is examples/embed.ts, verbatim", () => {
    const readme = Fs.readFileSync(Path.join(ROOT, "README.md"), "utf8")
    assert.include(readme, "```ts\n" + example + "```")
  })

  it("every export names a source module, and resolves by name to a built module that loads", () => {
    const named = Object.entries(pkg.exports).filter(([key, value]) => typeof value !== "string" && !key.includes("*"))
    for (const [key, value] of named) {
      const target = value as Record<string, string>
      assert.isTrue(Fs.existsSync(Path.join(ROOT, target["baton-source"]!)), `${key}: ${target["baton-source"]}`)
      assert.isTrue(Fs.existsSync(Path.join(ROOT, target["import"]!)), `${key}: ${target["import"]}`)
    }
    const specifiers = [...named.map(([key]) => `baton${key.slice(1)}`), "baton/domain/Events", "baton/domain/Settings"]
    const script = `for (const s of ${JSON.stringify(specifiers)}) { const m = await import(s); if (Object.keys(m).length === 0) throw new Error(s + " exports nothing") }`
    execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: "pipe" })
  })

  it.scopedLive("examples/embed.ts runs a task against a model server, with its own Layers", () =>
    Effect.gen(function*() {
      const dirs = yield* cliDirs
      Fs.writeFileSync(Path.join(dirs.workspace, "a.txt"), "A\n")
      Fs.writeFileSync(Path.join(dirs.workspace, "b.txt"), "B\n")
      const server = yield* MockModelServer.make({
        replies: [Reply.toolCalls([{ id: "call_1", name: "LS", args: { path: "." } }]), Reply.text("Two files: a.txt and b.txt.")]
      })
      const result = yield* Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
        const child = spawn(Path.join(ROOT, "node_modules", ".bin", "tsx"), [Path.join(ROOT, "examples", "embed.ts"), "What files are here?"], {
          cwd: dirs.workspace,
          env: cleanEnv(server.childEnv("anthropic"))
        })
        let stdout = ""
        let stderr = ""
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c))
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
        child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
        return Effect.sync(() => child.kill("SIGKILL"))
      })
      assert.strictEqual(result.code, 0, result.stderr)
      assert.strictEqual(result.stdout, "Two files: a.txt and b.txt.")
      assert.include(result.stderr, "[LS]")
      assert.isTrue(Fs.existsSync(Path.join(dirs.workspace, "conversations.db")))
      const second = (yield* server.requests)[1]!.body
      assert.include(second, "a.txt")
      assert.include(second, "b.txt")
    }))
})

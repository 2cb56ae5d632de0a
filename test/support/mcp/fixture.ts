import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { type McpServerConfig, type McpServerEntry, resolveServer } from "../../../src/domain/McpConfig.js"
import { ROOT } from "../cliProcess.js"

/** The test MCP servers: the fixture (fixture-server.mjs, stdio or HTTP) and the published server-everything. */

export const FIXTURE = Path.join(import.meta.dirname, "fixture-server.mjs")
export const EVERYTHING = Path.join(ROOT, "node_modules", ".bin", "mcp-server-everything")

/** The fixture over stdio, logging to `log`. */
export const fixtureEntry = (log: string, extra: Partial<McpServerEntry> = {}): McpServerEntry => ({
  command: process.execPath,
  args: [FIXTURE],
  env: { FIXTURE_LOG: log },
  ...extra
} as McpServerEntry)

export const config = (
  name: string,
  entry: McpServerEntry,
  workspace: string,
  env: Record<string, string> = {}
): McpServerConfig => resolveServer(name, entry, "test", workspace, (v) => env[v])

/** Waits until a line of `file` matches, woken by the file system (no sleeps); returns the line. */
export const awaitLine = (file: string, pattern: RegExp): Effect.Effect<string> =>
  Effect.async<string>((resume) => {
    let done = false
    const watcher = Fs.watch(Path.dirname(file), () => check())
    const check = () => {
      if (done) return
      const text = Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : ""
      const line = text.split("\n").find((l) => pattern.test(l))
      if (line === undefined) return
      done = true
      watcher.close()
      resume(Effect.succeed(line))
    }
    check()
    return Effect.sync(() => watcher.close())
  })

export const logLines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "") : []

/** The fixture as an HTTP server on 127.0.0.1 (`--http` or `--sse`), killed with the scope. */
export const httpFixture = (mode: "--http" | "--sse", log: string) =>
  Effect.acquireRelease(
    Effect.async<{ readonly port: number; readonly pid: number; readonly kill: () => void }>((resume) => {
      const child = spawn(process.execPath, [FIXTURE, mode], { env: { ...process.env, FIXTURE_LOG: log }, stdio: ["ignore", "pipe", "inherit"] })
      let out = ""
      child.stdout.setEncoding("utf8").on("data", (text: string) => {
        out += text
        const m = /listening (\d+)/.exec(out)
        if (m !== null) resume(Effect.succeed({ port: Number(m[1]), pid: child.pid!, kill: () => void child.kill("SIGKILL") }))
      })
    }),
    (server) => Effect.sync(server.kill)
  )

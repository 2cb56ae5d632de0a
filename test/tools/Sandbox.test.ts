import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { isAlive } from "../../src/services/ProcessIdentity.js"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import type { SandboxConfig } from "../../src/services/Sandbox.js"
import { toolCall } from "../support/Calls.js"
import { awaitFileText } from "../support/Processes.js"
import { pidsWith, requireBwrap } from "../support/sandbox.js"
import { tempDir } from "../support/tempDir.js"
import { executeBatch, workspaceHarness } from "../support/Workspace.js"

/**
 * Escape attempts, each a real Bash call through the ToolExecutor with the sandbox on
 * (workspace-write): each must fail, and nothing outside the workspace may change.
 */

const SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- planted-secret"
const STORE = "SQLite format 3 planted-store"

const setup = (sandbox: Partial<SandboxConfig> = {}, limits: { killGraceMs?: number } = {}) =>
  Effect.gen(function*() {
    const root = yield* tempDir
    const home = Path.join(root, "home")
    const batonHome = Path.join(home, ".baton")
    const workspace = Path.join(root, "ws")
    const outside = Path.join(root, "outside")
    for (const dir of [Path.join(home, ".ssh"), batonHome, workspace, outside]) Fs.mkdirSync(dir, { recursive: true })
    Fs.writeFileSync(Path.join(home, ".ssh", "id_ed25519"), SECRET)
    Fs.writeFileSync(Path.join(batonHome, "baton.db"), STORE)
    Fs.writeFileSync(Path.join(outside, "existing.txt"), "untouched\n")
    const executor = yield* makeToolExecutor({
      workspace,
      limits,
      processRegistryDir: Path.join(batonHome, "processes"),
      sandbox: { mode: "workspace-write", home, batonHome, ...sandbox }
    })
    const run = (args: unknown) =>
      Effect.flatMap(executeBatch(executor, [toolCall(`c-${Math.random()}`, "Bash", args)]), (b) => Effect.map(b.results, (r) => r[0]!))
    /** The outside directory as it is: names and contents. */
    const snapshot = () => Fs.readdirSync(outside).sort().map((name) => `${name}=${Fs.readFileSync(Path.join(outside, name), "utf8")}`)
    const before = snapshot()
    const unchanged = () => assert.deepStrictEqual(snapshot(), before, "nothing outside the workspace changed")
    return { root, home, batonHome, workspace, outside, executor, run, unchanged }
  })

const loopbackServer = Effect.acquireRelease(
  Effect.async<Http.Server>((resume) => {
    const server = Http.createServer((_req, res) => res.end("hello from outside"))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

const fetchWithBash = (port: number) => `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`

describe.runIf(requireBwrap("test/tools/Sandbox.test.ts"))("Bash in the sandbox (workspace-write)", () => {
  it.scopedLive("the workspace is writable; exit code, stdout and stderr come back as without a sandbox", () =>
    Effect.gen(function*() {
      const { executor, run, workspace } = yield* setup()
      assert.deepStrictEqual(executor.sandbox, { mode: "workspace-write", network: false, active: true })
      const result = yield* run({ command: "echo inside > made.txt && pwd && echo note >&2 && echo $TMPDIR > /tmp/t && cat /tmp/t; exit 3" })
      assert.strictEqual(result.exit_code, 3)
      assert.strictEqual(result.stdout, `${workspace}\n/tmp\n`)
      assert.strictEqual(result.stderr, "note\n")
      assert.strictEqual(Fs.readFileSync(Path.join(workspace, "made.txt"), "utf8"), "inside\n")
    }))

  it.scopedLive("writing outside fails: an absolute path, .., a symlink made inside, a hard link, /proc/self/root", () =>
    Effect.gen(function*() {
      const { outside, run, unchanged } = yield* setup()
      const attempts = [
        `echo escaped > ${outside}/absolute.txt`,
        "echo escaped > ../outside/dotdot.txt",
        `ln -s ${outside}/via-link.txt link && echo escaped > link`,
        `ln ${outside}/existing.txt hard && echo escaped > hard`,
        `echo escaped > /proc/self/root${outside}/proc.txt`,
        `echo escaped >> /proc/self/root${outside}/existing.txt`
      ]
      for (const command of attempts) {
        const result = yield* run({ command })
        assert.strictEqual(result.status, "error", command)
        unchanged()
      }
      const refused = yield* run({ command: `echo escaped > ${outside}/absolute.txt` })
      assert.include(refused.output, "Read-only file system")
      assert.include(refused.output, "ran inside the sandbox")
      assert.include(refused.output, "sandbox: false")
    }))

  it.scopedLive("the home's secrets and Baton's own home are hidden", () =>
    Effect.gen(function*() {
      const { batonHome, home, run } = yield* setup()
      for (const file of [Path.join(home, ".ssh", "id_ed25519"), Path.join(batonHome, "baton.db")]) {
        const result = yield* run({ command: `cat ${file}` })
        assert.strictEqual(result.status, "error")
        assert.notInclude(result.output, "planted")
        assert.include(result.stderr, "No such file or directory")
        assert.strictEqual((yield* run({ command: `ls -A ${Path.dirname(file)}` })).output, "(no output)", "its directory looks empty")
      }
      const writeSecret = yield* run({ command: `echo x > ${home}/.ssh/authorized_keys` })
      assert.strictEqual(writeSecret.status, "error")
      assert.isFalse(Fs.existsSync(Path.join(home, ".ssh", "authorized_keys")))
    }))

  it.scopedLive("the paths of settings' hidden are hidden too, ~ meaning the home", () =>
    Effect.gen(function*() {
      const { home, run } = yield* setup({ hidden: ["~/.kube"] })
      Fs.mkdirSync(Path.join(home, ".kube"))
      Fs.writeFileSync(Path.join(home, ".kube", "config"), "token: planted")
      const result = yield* run({ command: `cat ${home}/.kube/config` })
      assert.strictEqual(result.status, "error")
      assert.notInclude(result.output, "planted")
    }))

  it.scopedLive("a .env file in the workspace is hidden unless a rule lets the model read it", () =>
    Effect.gen(function*() {
      const hidden = yield* setup()
      Fs.writeFileSync(Path.join(hidden.workspace, ".env"), "API_KEY=planted\n")
      const refused = yield* hidden.run({ command: "cat .env" })
      assert.notInclude(refused.output, "planted")
      const shown = yield* setup({ exposed: (file) => file.endsWith("/.env") })
      Fs.writeFileSync(Path.join(shown.workspace, ".env"), "API_KEY=planted\n")
      assert.include((yield* shown.run({ command: "cat .env" })).output, "planted")
    }))

  it.scopedLive("no network unless allowed: a loopback HTTP server is unreachable, then reachable with network: true", () =>
    Effect.gen(function*() {
      const server = yield* loopbackServer
      const port = (server.address() as AddressInfo).port
      const closed = yield* setup()
      const refused = yield* closed.run({ command: fetchWithBash(port) })
      assert.strictEqual(refused.status, "error")
      assert.notInclude(refused.output, "hello from outside")
      assert.include(refused.output, "no network")
      const open = yield* setup({ network: true })
      const reached = yield* open.run({ command: fetchWithBash(port) })
      assert.strictEqual(reached.status, "success", reached.output)
      assert.include(reached.output, "hello from outside")
    }))

  it.scopedLive("a process outside cannot be killed by its pid", () =>
    Effect.gen(function*() {
      const { run } = yield* setup()
      const victim = yield* Effect.acquireRelease(
        Effect.sync(() => spawn("sleep", ["300"], { stdio: "ignore" })),
        (child) => Effect.sync(() => child.kill("SIGKILL"))
      )
      const result = yield* run({ command: `kill -9 ${victim.pid}` })
      assert.strictEqual(result.status, "error")
      assert.isTrue(isAlive(victim.pid!), "the process outside still runs")
    }))

  it.scopedLive("background processes, even ones that left the group, are gone when the call ends", () =>
    Effect.gen(function*() {
      const { run } = yield* setup()
      const token = `bg${process.pid}${Date.now()}`
      const result = yield* run({ command: `(exec -a ${token}-a sleep 300) & setsid bash -c 'exec -a ${token}-b sleep 300' & echo started` })
      assert.strictEqual(result.output, "started")
      assert.deepStrictEqual(pidsWith(token), [])
    }))

  it.scopedLive("/dev/shm and /tmp are private: nothing written there appears outside", () =>
    Effect.gen(function*() {
      const { run } = yield* setup()
      const name = `baton-sandbox-${process.pid}-${Date.now()}`
      const result = yield* run({ command: `echo x > /dev/shm/${name}; echo x > /tmp/${name}; cat /dev/shm/${name} /tmp/${name}` })
      assert.strictEqual(result.output, "x\nx")
      assert.isFalse(Fs.existsSync(`/dev/shm/${name}`))
      assert.isFalse(Fs.existsSync(`/tmp/${name}`))
    }))

  it.scopedLive("sandbox: false runs outside (the approval gate always asks for it first)", () =>
    Effect.gen(function*() {
      const { outside, run } = yield* setup()
      const result = yield* run({ command: `echo free > ${outside}/free.txt`, sandbox: false })
      assert.strictEqual(result.status, "success")
      assert.strictEqual(Fs.readFileSync(Path.join(outside, "free.txt"), "utf8"), "free\n")
    }))

  it.scopedLive("read-only: not even the workspace is writable", () =>
    Effect.gen(function*() {
      const { run, workspace } = yield* setup({ mode: "read-only" })
      Fs.writeFileSync(Path.join(workspace, "a.txt"), "alpha\n")
      assert.strictEqual((yield* run({ command: "cat a.txt" })).output, "alpha")
      const result = yield* run({ command: "echo x > b.txt" })
      assert.strictEqual(result.status, "error")
      assert.isFalse(Fs.existsSync(Path.join(workspace, "b.txt")))
    }))

  it.scopedLive("interrupting the call kills every process it started, inside the sandbox", () =>
    Effect.gen(function*() {
      const { executor, workspace } = yield* setup()
      const token = `int${process.pid}${Date.now()}`
      const scope = yield* Scope.make()
      const batch = yield* Scope.extend(
        executeBatch(executor, [toolCall("sleep", "Bash", { command: `(exec -a ${token} sleep 300) & echo up > up.txt; wait` })]),
        scope
      )
      yield* awaitFileText(Path.join(workspace, "up.txt"))
      assert.isAbove(pidsWith(token).length, 0)
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(pidsWith(token), [], "everything the command started is gone")
      const [result] = yield* batch.results
      assert.strictEqual(result!.status, "interrupted")
    }))

  it.scopedLive("a command past its timeout is killed whole and reported as before", () =>
    Effect.gen(function*() {
      const { run } = yield* setup({}, { killGraceMs: 200 })
      const token = `to${process.pid}${Date.now()}`
      const result = yield* run({ command: `echo before; (exec -a ${token} sleep 300) & wait`, timeout: 500 })
      assert.include(result.output, "before")
      assert.include(result.output, "timed out after 500 ms")
      assert.strictEqual(result.exit_code, 143)
      assert.deepStrictEqual(pidsWith(token), [])
    }))
})

describe("Bash with no sandbox available", () => {
  it.scopedLive("the executor says why; the command still runs when it is run (the gate asks first)", () =>
    Effect.gen(function*() {
      const empty = yield* tempDir
      const { executor } = yield* workspaceHarness({ sandbox: { mode: "workspace-write", searchPath: empty } })
      assert.strictEqual(executor.sandbox?.active, false)
      assert.include(executor.sandbox?.unavailable, "bwrap not found")
      assert.include(executor.sandbox?.unavailable, "apt-get install bubblewrap")
    }))
})

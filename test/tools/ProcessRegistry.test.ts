import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { makeToolExecutor } from "../../src/services/tools/Executor.js"
import { isAlive, readProcStat } from "../../src/services/ProcessIdentity.js"
import { killGroup, liveMembers } from "../../src/services/ProcessGroup.js"
import { OWNER_ENV, registryVariable } from "../../src/services/ProcessRegistry.js"
import { GATE } from "../../src/services/tools/Bash.js"
import { toolCall } from "../support/Calls.js"
import { tempDir } from "../support/tempDir.js"
import { awaitFileText } from "../support/Processes.js"
import { executeBatch } from "../support/Workspace.js"

/** A detached group of two sleeps, as a crashed Baton would leave it; killed at scope end whatever happens. */
const leftoverGroup = (dir: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const marker = Path.join(dir, `ready-${Math.random()}`)
      const child = spawn("bash", ["-c", `sleep 300 & echo $! > ${marker}; exec sleep 300`], {
        detached: true,
        stdio: "ignore",
        env: { ...process.env, ...env }
      })
      child.unref()
      const background = Number(yield* awaitFileText(marker))
      return { pgid: child.pid!, pids: [child.pid!, background] }
    }),
    (group) => killGroup(group.pgid, "100 millis")
  )

const record = (dir: string, pgid: number, owner: { pid: number; startTime: string }) =>
  Fs.writeFileSync(Path.join(dir, `${pgid}.json`), JSON.stringify({ pgid, owner }))

describe("process registry (reaping what a crash left)", () => {
  it.scopedLive("kills a recorded group whose owner is gone and whose members carry its marker", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const registry = Path.join(root, "processes")
      const workspace = Path.join(root, "ws")
      Fs.mkdirSync(registry)
      Fs.mkdirSync(workspace)
      // Same pid as this process but another start time: a dead owner whose pid was reused.
      const deadOwner = { pid: process.pid, startTime: "1" }
      const orphan = yield* leftoverGroup(root, { [OWNER_ENV]: `${deadOwner.pid}:${deadOwner.startTime}` })
      record(registry, orphan.pgid, deadOwner)
      const stranger = yield* leftoverGroup(root, {})
      record(registry, stranger.pgid, deadOwner)
      const liveOwner = { pid: process.pid, startTime: readProcStat("self")!.startTime }
      const sibling = yield* leftoverGroup(root, { [OWNER_ENV]: `${liveOwner.pid}:${liveOwner.startTime}` })
      record(registry, sibling.pgid, liveOwner)

      yield* makeToolExecutor({ workspace, processRegistryDir: registry, limits: { killGraceMs: 200 } })

      assert.isFalse(orphan.pids.some(isAlive), "the orphaned group is gone")
      assert.isTrue(stranger.pids.every(isAlive), "a group without the marker (pgid reused) is left alone")
      assert.isTrue(sibling.pids.every(isAlive), "a group of a live owner is left alone")
      assert.sameMembers(Fs.readdirSync(registry), [`${sibling.pgid}.json`])
    }))

  it.scopedLive("a dead owner's marked group that no record names is found and killed; a live owner's and another home's are not", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const registry = Path.join(root, "processes")
      const workspace = Path.join(root, "ws")
      Fs.mkdirSync(workspace)
      const deadOwner = { pid: process.pid, startTime: "2" }
      const ours = { [registryVariable(OWNER_ENV)]: registry }
      const unrecorded = yield* leftoverGroup(root, { [OWNER_ENV]: `${deadOwner.pid}:${deadOwner.startTime}`, ...ours })
      const elsewhere = yield* leftoverGroup(root, { [OWNER_ENV]: `${deadOwner.pid}:${deadOwner.startTime}`, [registryVariable(OWNER_ENV)]: `${registry}-other-home` })
      const liveOwner = { pid: process.pid, startTime: readProcStat("self")!.startTime }
      const sibling = yield* leftoverGroup(root, { [OWNER_ENV]: `${liveOwner.pid}:${liveOwner.startTime}`, ...ours })

      yield* makeToolExecutor({ workspace, processRegistryDir: registry, limits: { killGraceMs: 200 } })

      assert.isFalse(unrecorded.pids.some(isAlive), "the unrecorded orphan is gone")
      assert.isTrue(elsewhere.pids.every(isAlive), "another home's orphan is that home's to reap")
      assert.isTrue(sibling.pids.every(isAlive), "a live owner's shell is left alone")
    }))

  it.scopedLive("the gated shell runs nothing until released, and exits without running the command if its releaser dies", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const gated = (marker: string) =>
        spawn("bash", ["-c", GATE, "bash", `touch ${Path.join(root, marker)}`], { stdio: ["ignore", "ignore", "ignore", "pipe"] })
      const exitOf = (child: ReturnType<typeof gated>) =>
        Effect.async<number | null>((resume) => void child.once("exit", (code) => resume(Effect.succeed(code))))
      // The releaser "dies": its end of the gate closes without the word.
      const abandoned = gated("abandoned")
      const gate = abandoned.stdio[3]
      if (gate !== null && gate !== undefined && "end" in gate) gate.end()
      assert.strictEqual(yield* exitOf(abandoned), 125)
      assert.isFalse(Fs.existsSync(Path.join(root, "abandoned")))
      const released = gated("released")
      const go = released.stdio[3]
      if (go !== null && go !== undefined && "end" in go) go.end("go\n")
      assert.strictEqual(yield* exitOf(released), 0)
      assert.isTrue(Fs.existsSync(Path.join(root, "released")))
    }))

  it.scopedLive("a running Bash is recorded before its command starts, and the record goes when the group is gone", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const registry = Path.join(root, "processes")
      const workspace = Path.join(root, "ws")
      Fs.mkdirSync(workspace)
      const executor = yield* makeToolExecutor({ workspace, processRegistryDir: registry })
      const batch = yield* executeBatch(executor, [
        toolCall("b", "Bash", { command: `ls ${registry}; echo "$${OWNER_ENV}"` })
      ])
      const [result] = yield* batch.results
      const [listed, marker] = result!.output.split("\n")
      assert.match(listed!, /^\d+\.json$/)
      assert.strictEqual(marker, `${process.pid}:${readProcStat("self")!.startTime}`)
      assert.deepStrictEqual(Fs.readdirSync(registry), [])
      assert.deepStrictEqual(liveMembers(Number(listed!.slice(0, -5))), [])
    }))
})

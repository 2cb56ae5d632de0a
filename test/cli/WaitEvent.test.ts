import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { BIN, cleanEnv, cliDirs, jsonEvents, ROOT, startCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"

/**
 * The client's own waits are visible (issue 16, point 3): `baton run --json` on a conversation
 * another process is running prints a `wait` event (reason `busy`, the policy's delay) before it
 * waits, so a program reading the stream can show the countdown and offer to skip it.
 */

/** Starts the built CLI and resolves with its stdout once a line satisfies `until`; killed with the scope. */
const readUntil = (args: ReadonlyArray<string>, env: Record<string, string>, until: (line: string) => boolean) =>
  Effect.acquireRelease(
    Effect.sync(() => spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cleanEnv(env), stdio: ["pipe", "pipe", "pipe"] })),
    (child) => Effect.sync(() => void (child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")))
  ).pipe(Effect.flatMap((child) =>
    Effect.async<string, Error>((resume) => {
      let stdout = ""
      let stderr = ""
      child.stdin.end()
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c))
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        stdout += c
        if (stdout.split("\n").some(until)) resume(Effect.succeed(stdout))
      })
      child.once("close", (code) => resume(Effect.fail(new Error(`exited ${code} before the line came: ${stdout}\n${stderr}`))))
    })
  ))

describe("baton run --json: the client's waits", () => {
  it.scopedLive("a busy conversation: a wait event with reason busy and the policy's first delay, before the wait", () =>
    Effect.gen(function*() {
      const server = yield* MockModelServer.make({ replies: [Reply.text("never", {}, { hang: true })] })
      const dirs = yield* cliDirs
      const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home }
      const args = ["run", "--json", "--approve", "allow", "--workspace", dirs.workspace]
      // The first task holds the conversation: its model request is never answered.
      yield* startCli([...args, "first"], { env })
      yield* server.awaitRequests(1)
      const stdout = yield* readUntil([...args, "--continue", "second"], env, (line) => line.includes(`"type":"wait"`))
      const waits = jsonEvents(stdout.slice(0, stdout.lastIndexOf("\n") + 1)).filter((e) => e.type === "wait")
      assert.deepStrictEqual(waits, [{ type: "wait", reason: "busy", retry_in_ms: 10_000 }])
      // The second task never reached the model: it is waiting.
      assert.strictEqual((yield* server.requests).length, 1)
    }), 30_000)
})

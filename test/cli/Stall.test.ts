import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { cliDirs, runCli } from "../support/cliProcess.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"

/**
 * The two watchdogs end to end, as a user sets them: only the variable under test is short, the other
 * keeps its 300 s default (the case that used to hang: the stall deadline waited behind the first-byte
 * one). Plain `baton run`, no tool before: the first model request is the faulty one. Once the queue
 * is empty the mock answers every request, so a slow machine that times out once more still ends.
 */
const runAgainst = (fault: Reply, timeout: Record<string, string>) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [fault], respond: () => Reply.text("recovered") })
    const dirs = yield* cliDirs
    const env = { ...server.childEnv("openai-chat"), BATON_HOME: dirs.home, ...timeout }
    const result = yield* runCli(["run", "--workspace", dirs.workspace, "say something"], { env })
    return { result, requests: yield* server.requests }
  })

describe.concurrent("baton run against a silent model", () => {
  it.scopedLive("BATON_STALL_TIMEOUT_MS=500, three chunks then silence → a reconnect carrying the partial text; exit 0", () =>
    Effect.gen(function*() {
      const { result, requests } = yield* runAgainst(
        Reply.text(["half ", "an ", "answer"], {}, { stallAfter: 3 }),
        { BATON_STALL_TIMEOUT_MS: "500" }
      )
      assert.strictEqual(result.code, 0, result.stderr)
      assert.strictEqual(requests.length, 2, result.stderr)
      assert.notMatch(requests[0]!.body, /turn_retried/)
      assert.match(requests[1]!.body, /\[turn_retried\][\s\S]*half an[\s\S]*\[\/turn_retried\]/)
      assert.include(result.stdout, "recovered")
    }), 60_000)

  it.scopedLive("BATON_FIRST_BYTE_TIMEOUT_MS=500, a model that accepts the request and sends nothing → a reconnect; exit 0", () =>
    Effect.gen(function*() {
      const { result, requests } = yield* runAgainst(
        Reply.text("never sent", {}, { hang: true }),
        { BATON_FIRST_BYTE_TIMEOUT_MS: "500" }
      )
      assert.strictEqual(result.code, 0, result.stderr)
      assert.isAtLeast(requests.length, 2, result.stderr)
      assert.match(requests[1]!.body, /say something/)
      assert.include(result.stdout, "recovered")
    }), 60_000)

  it.scopedLive("headers then silence (no body byte) counts as the first byte → a reconnect; exit 0", () =>
    Effect.gen(function*() {
      const { result, requests } = yield* runAgainst(
        Reply.text("never sent", {}, { stallAfter: 0 }),
        { BATON_FIRST_BYTE_TIMEOUT_MS: "500" }
      )
      assert.strictEqual(result.code, 0, result.stderr)
      assert.isAtLeast(requests.length, 2, result.stderr)
      assert.include(result.stdout, "recovered")
    }), 60_000)
})

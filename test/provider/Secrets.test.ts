import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Logger, LogLevel } from "effect"
import * as Path from "node:path"
import { Provider } from "../../src/services/Provider.js"
import { layerFromOptions } from "../../src/services/provider/Config.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import type { Wire } from "../support/MockWire.js"
import { request, run, TEST_KEY } from "../support/ProviderHarness.js"

/**
 * The key is used for real (the server sees it), yet no log line at any level, no error message and no
 * cassette line carries it, even when the server echoes it back in an error body.
 */
const echo = `upstream rejected ${TEST_KEY}`
const errorEvent: Record<Wire, string> = {
  "openai-chat": `data: {"error":{"type":"server_error","message":"${echo}"}}\n\n`,
  "anthropic": `event: error\ndata: {"type":"error","error":{"type":"api_error","message":"${echo}"}}\n\n`,
  "openai-responses": `event: error\ndata: {"type":"error","error":{"type":"server_error","message":"${echo}"}}\n\n`
}

describe("the API key never leaks", () => {
  for (const wire of ["openai-chat", "anthropic", "openai-responses"] as const satisfies ReadonlyArray<Wire>) {
    it.scopedLive(`${wire}: logs, errors and the recorded cassette are clean`, () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const dir = yield* fs.makeTempDirectoryScoped({ prefix: "baton-secrets-" })
        const cassette = Path.join(dir, "calls.jsonl")
        const server = yield* MockModelServer.make({
          replies: [
            Reply.toolCalls([{ id: "c1", name: "Read", args: { path: "a" } }], { text: "ok" }),
            Reply.status(401, { body: JSON.stringify({ error: { type: "authentication_error", message: `invalid key ${TEST_KEY}` } }) }),
            Reply.sse([errorEvent[wire]]),
            // an event no decoder accepts, quoting the key: its excerpt lands in a ProviderMalformed message
            Reply.sse([`event: junk\ndata: {"type":"junk","echo":"${TEST_KEY}"}\n\n`]),
            Reply.text("late", {}, { cutAfter: 1 })
          ]
        })
        const lines: Array<string> = []
        const capture = Logger.replace(
          Logger.defaultLogger,
          Logger.make((options) => void lines.push(JSON.stringify(Logger.structuredLogger.log(options))))
        )
        const outcomes = yield* Effect.flatMap(Provider, (p) =>
          Effect.forEach([1, 2, 3, 4, 5], (n) => run(p.stream(request({ system: `call ${n}` }))))).pipe(
            Effect.provide(layerFromOptions({ provider: wire, model: "m", baseUrl: server.baseUrl(wire), recordTo: cassette })),
            Effect.provide(capture),
            Logger.withMinimumLogLevel(LogLevel.All),
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["BATON_API_KEY", TEST_KEY]])))
          )

        const sent = yield* server.requests
        const keyHeader = wire === "anthropic" ? sent[0]?.headers["x-api-key"] : sent[0]?.headers.authorization
        assert.include(String(keyHeader), TEST_KEY) // the key was really in play

        const errors = outcomes.flatMap((o) => (o.error === undefined ? [] : [o.error]))
        assert.deepStrictEqual(errors.map((e) => e._tag), ["ProviderAuth", "ProviderServerError", "ProviderMalformed", "ProviderConnectionLost"])
        for (const e of errors) {
          assert.notInclude(e.message, TEST_KEY)
          assert.notInclude(JSON.stringify(e), TEST_KEY)
        }

        assert.isAbove(lines.length, 0)
        for (const line of lines) assert.notInclude(line, TEST_KEY)

        const recorded = yield* fs.readFileString(cassette)
        assert.strictEqual(recorded.trim().split("\n").length, 5)
        assert.notInclude(recorded, TEST_KEY)
      }).pipe(Effect.provide(NodeFileSystem.layer)))
  }
})

import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Stream } from "effect"
import * as Path from "node:path"
import { ProviderServerError } from "../../src/domain/ProviderError.js"
import type { ProviderRequest } from "../../src/domain/ProviderEvent.js"
import { Provider } from "../../src/services/Provider.js"
import * as ProviderCassette from "../../src/services/provider/Cassette.js"
import { layerFromOptions } from "../../src/services/provider/Config.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import { call, type Outcome, request, result, run, user } from "../support/ProviderHarness.js"

const tools = [{ name: "Read", description: "Read a file", parameters: { type: "object" } }]

const first = request({ history: [user("read a.txt", "otid-1")], tools })
/** Same model-visible content as `first`, different bookkeeping: must hash alike. */
const firstAgain: ProviderRequest = request({ history: [{ ...user("read a.txt", "otid-99"), seq: 7 }], tools })
const second = request({
  history: [user("read a.txt"), call("c1", "Read", "{\"path\":\"a.txt\"}"), { ...result("c1", "AAA"), duration_ms: 12, exit_code: 0, files: { "a.txt": { sha256: "0f" } } }],
  tools
})

const script = [
  Turn.toolCalls([{ id: "c1", name: "Read", args: { path: "a.txt" } }]),
  Turn.fail(new ProviderServerError({ status: 503, message: "down" }), { text: "partial" }),
  Turn.text("a.txt says AAA")
]

const runAll = (requests: ReadonlyArray<ProviderRequest>) =>
  Effect.flatMap(Provider, (p) => Effect.forEach(requests, (r) => run(p.stream(r))))

const tempFile = Effect.gen(function*() {
  const fs = yield* FileSystem.FileSystem
  const dir = yield* fs.makeTempDirectoryScoped({ prefix: "baton-cassette-" })
  return Path.join(dir, "cassette.jsonl")
})

const record = (path: string, requests: ReadonlyArray<ProviderRequest>) =>
  runAll(requests).pipe(
    Effect.provide(ProviderCassette.layerRecord(path).pipe(Layer.provide([layerScripted(script), NodeFileSystem.layer])))
  )

const replay = (path: string, requests: ReadonlyArray<ProviderRequest>) =>
  runAll(requests).pipe(Effect.provide(ProviderCassette.layerReplay(path).pipe(Layer.provide(NodeFileSystem.layer))))

describe("normalization and hashing", () => {
  it("the hash ignores otid, seq, run ids, durations and exit codes, but not content", () => {
    assert.strictEqual(ProviderCassette.requestHash(first), ProviderCassette.requestHash(firstAgain))
    assert.notStrictEqual(ProviderCassette.requestHash(first), ProviderCassette.requestHash(request({ history: [user("read b.txt")], tools })))
    const withoutBookkeeping = request({
      history: [user("read a.txt", "another-otid"), call("c1", "Read", "{\"path\":\"a.txt\"}"), result("c1", "AAA")],
      tools
    })
    assert.strictEqual(ProviderCassette.requestHash(second), ProviderCassette.requestHash(withoutBookkeeping))
  })

  it("describes a request briefly", () => {
    assert.strictEqual(ProviderCassette.describeRequest(first), "default model, 1 history items, 1 tools, last user_message \"read a.txt\"")
  })
})

describe("record then replay", () => {
  it.scoped("replay yields the identical event sequences and errors, identical requests in recorded order", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const recorded = yield* record(path, [first, firstAgain, second])
      const replayed = yield* replay(path, [first, firstAgain, second])
      assert.deepStrictEqual(replayed, recorded)
      // the two identical requests got different recordings, served in order
      assert.strictEqual(recorded[0]?.events[0]?._tag, "ToolCallStart")
      assert.deepStrictEqual(recorded[1]?.events, [{ _tag: "TextDelta", text: "partial" }])
      assert.strictEqual(recorded[1]?.error?._tag, "ProviderServerError")
      const lines = (yield* (yield* FileSystem.FileSystem).readFileString(path)).trim().split("\n")
      assert.strictEqual(lines.length, 3)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a miss fails with ProviderReplayMiss naming the request's hash and content", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* record(path, [first])
      const other = request({ history: [user("something never recorded")], tools })
      const [served, again, miss]: ReadonlyArray<Outcome> = yield* replay(path, [first, first, other])
      assert.isUndefined(served?.error)
      const exhausted = again?.error
      assert.strictEqual(exhausted?._tag, "ProviderReplayMiss")
      const missed = miss?.error
      assert.strictEqual(missed?._tag, "ProviderReplayMiss")
      const hash = ProviderCassette.requestHash(other)
      assert.strictEqual(missed?._tag === "ProviderReplayMiss" ? missed.requestHash : "", hash)
      assert.include(missed?.message, hash)
      assert.include(missed?.message, "something never recorded")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("an interrupted call is not recorded", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      yield* Effect.flatMap(Provider, (p) => p.stream(first).pipe(Stream.take(1), Stream.runDrain)).pipe(
        Effect.provide(ProviderCassette.layerRecord(path).pipe(Layer.provide([layerScripted(script), NodeFileSystem.layer])))
      )
      const fs = yield* FileSystem.FileSystem
      assert.isFalse(yield* fs.exists(path))
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("a missing or corrupt cassette is a ConfigError when the layer is built", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const missing = yield* Effect.flip(replay(path, []))
      assert.strictEqual(missing._tag, "ConfigError")
      yield* (yield* FileSystem.FileSystem).writeFileString(path, "{\"hash\":\"x\"}\n")
      const corrupt = yield* Effect.flip(replay(path, []))
      assert.strictEqual(corrupt.field, "line 1")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

describe("record a live provider, replay without the network", () => {
  it.scopedLive("layerFromOptions({ recordTo }) then layerFromOptions({ provider: \"replay\" })", () =>
    Effect.gen(function*() {
      const path = yield* tempFile
      const server = yield* MockModelServer.make({
        replies: [
          Reply.fixture("sse/anthropic/thinking-then-text.sse"),
          Reply.errorFixture("errors/anthropic/429-rate-limit-error")
        ]
      })
      const env = Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["BATON_API_KEY", "sk-test-cassette"]])))
      const live = { provider: "anthropic", model: "claude-test", baseUrl: server.baseUrl("anthropic"), recordTo: path } as const
      const recorded = yield* runAll([first, second]).pipe(Effect.provide(layerFromOptions(live)), env)
      assert.isAbove(recorded[0]?.events.length ?? 0, 100)
      assert.strictEqual(recorded[1]?.error?._tag, "ProviderRateLimited")
      const replayed = yield* runAll([firstAgain, second]).pipe(Effect.provide(layerFromOptions({ provider: "replay", cassette: path })), env)
      assert.deepStrictEqual(replayed, recorded)
      assert.strictEqual((yield* server.requests).length, 2) // replay never touched the network
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

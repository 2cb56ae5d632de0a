import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as MockModelServer from "../support/MockModelServer.js"
import { Reply } from "../support/MockModelServer.js"
import type { Wire } from "../support/MockWire.js"
import { collapse, liveProvider, request, run, settings } from "../support/ProviderHarness.js"

/**
 * Only the timeout under test is short (150 ms), so every fault resolves in well under a second of real
 * time; the other stays long so a busy machine cannot turn one fault into another.
 */
const SHORT = 150
const LONG = 10_000
const firstByte = { firstByteMs: SHORT, stallMs: LONG }
const stall = { firstByteMs: LONG, stallMs: SHORT }
const patient = { firstByteMs: LONG, stallMs: LONG }

const WIRES: ReadonlyArray<Wire> = ["openai-chat", "anthropic", "openai-responses"]

const against = (wire: Wire, reply: Reply, timeouts = patient) =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [reply] })
    const provider = yield* liveProvider(wire, settings(server.baseUrl(wire), { timeouts }))
    return yield* run(provider.stream(request()))
  })

/** A port nothing listens on: bind, read the port, close. */
const closedPort = Effect.async<number>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

for (const wire of WIRES) {
  describe(`${wire} faults`, () => {
    it.scopedLive("no answer at all → ProviderTimeout{first_byte}", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(wire, Reply.text("never sent", {}, { hang: true }), firstByte)
        assert.deepStrictEqual(events, [])
        assert.deepStrictEqual(error?._tag === "ProviderTimeout" && { phase: error.phase, afterMs: error.afterMs }, {
          phase: "first_byte",
          afterMs: SHORT
        })
      }))

    it.scopedLive("headers but no body byte → ProviderTimeout{first_byte}", () =>
      Effect.gen(function*() {
        const { error } = yield* against(wire, Reply.text("never sent", {}, { stallAfter: 0 }), firstByte)
        assert.strictEqual(error?._tag === "ProviderTimeout" ? error.phase : error?._tag, "first_byte")
      }))

    it.scopedLive("a delay shorter than the timeout is only a delay", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(wire, Reply.text("late but fine", {}, { delayMs: 30 }))
        assert.isUndefined(error)
        assert.deepStrictEqual(collapse(events)[0], { _tag: "TextDelta", text: "late but fine" })
      }))

    it.scopedLive("silence mid-stream → ProviderTimeout{stall}, after the events that arrived", () =>
      Effect.gen(function*() {
        const { events, error } = yield* against(wire, Reply.text(["one ", "two ", "three"], {}, { stallAfter: 4 }), stall)
        assert.strictEqual(error?._tag === "ProviderTimeout" ? error.phase : error?._tag, "stall")
        assert.isTrue(events.length > 0 && events.every((e) => e._tag === "TextDelta"))
        assert.isTrue("one two three".startsWith(events.map((e) => (e._tag === "TextDelta" ? e.text : "")).join("")))
      }))

    it.scopedLive("connection cut mid-stream → ProviderConnectionLost", () =>
      Effect.gen(function*() {
        const { error } = yield* against(wire, Reply.text(["one ", "two ", "three"], {}, { cutAfter: 3 }))
        assert.strictEqual(error?._tag, "ProviderConnectionLost")
      }))

    it.scopedLive("body ended cleanly but early → ProviderMalformed{truncated}", () =>
      Effect.gen(function*() {
        const { error } = yield* against(wire, Reply.text("a longer answer that gets cut", {}, { truncateAt: 400 }))
        assert.strictEqual(error?._tag === "ProviderMalformed" ? error.reason : error?._tag, "truncated")
      }))

    it.live("connection refused → ProviderConnectionLost", () =>
      Effect.gen(function*() {
        const port = yield* closedPort
        const base = wire === "anthropic" ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1`
        const provider = yield* liveProvider(wire, settings(base, { timeouts: patient }))
        const { error } = yield* run(provider.stream(request()))
        assert.strictEqual(error?._tag, "ProviderConnectionLost")
        assert.include(error?.message, "ECONNREFUSED")
      }))

    it.scopedLive("an undecodable event → ProviderMalformed{undecodable_event}; bad JSON → bad_json", () =>
      Effect.gen(function*() {
        const wrongShape = wire === "openai-chat"
          ? "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":42}}]}\n\n"
          : "event: surprise\ndata: {\"type\":\"surprise\"}\n\n"
        const shapeOutcome = yield* against(wire, Reply.sse([wrongShape]))
        assert.strictEqual(shapeOutcome.error?._tag === "ProviderMalformed" ? shapeOutcome.error.reason : "", "undecodable_event")
        const badJson = yield* against(wire, Reply.sse(["data: {\"type\": oops\n\n"]))
        assert.strictEqual(badJson.error?._tag === "ProviderMalformed" ? badJson.error.reason : "", "bad_json")
      }))
  })
}

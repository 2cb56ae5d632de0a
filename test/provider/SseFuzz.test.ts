import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { ProviderEvent } from "../../src/domain/ProviderEvent.js"
import { emptyAssembly, end, stepAll } from "../../src/domain/RunAssembler.js"
import { makeAnthropicDecoder } from "../../src/services/provider/AnthropicDecoder.js"
import { makeChatDecoder } from "../../src/services/provider/OpenAiChatDecoder.js"
import { makeResponsesDecoder } from "../../src/services/provider/OpenAiResponsesDecoder.js"
import { runDecoder, type WireDecoder } from "../../src/services/provider/WireDecoder.js"
import { decodeSse } from "../../src/services/Sse.js"
import { FIXTURES } from "../support/MockModelServer.js"

/**
 * A seeded fuzz of the byte path every live provider shares: the SSE parser, the wire decoders and the
 * run assembler (which accumulates tool-call arguments). Each recorded fixture is cut at random byte
 * offsets — inside events, lines, JSON strings and multi-byte characters — and must decode to exactly
 * the events, the failure and the assembled messages it decodes to in one piece. The seed makes every
 * failure reproducible: rerun with the seed the message names.
 */

const SPLITS_PER_FIXTURE = 60

/** mulberry32: a small, fast, seedable PRNG. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Random pieces: mostly tiny (1–8 bytes), sometimes large, so both byte-level and event-level cuts occur. */
const split = (bytes: Uint8Array, seed: number): ReadonlyArray<Uint8Array> => {
  const random = prng(seed)
  const pieces: Array<Uint8Array> = []
  let at = 0
  while (at < bytes.length) {
    const size = random() < 0.8 ? 1 + Math.floor(random() * 8) : 1 + Math.floor(random() * 400)
    pieces.push(bytes.subarray(at, at + size))
    at += size
  }
  return pieces
}

const decoders: Record<string, { readonly provider: string; readonly make: () => WireDecoder }> = {
  "openai-chat": { provider: "openai-chat", make: makeChatDecoder({ secrets: [], newIdPrefix: () => "fuzz" }) },
  "openai-compatible": { provider: "openai-chat", make: makeChatDecoder({ secrets: [], newIdPrefix: () => "fuzz" }) },
  anthropic: { provider: "anthropic", make: makeAnthropicDecoder({ secrets: [] }) },
  "openai-responses": { provider: "openai-responses", make: makeResponsesDecoder({ secrets: [] }) }
}

/** Events, the failure (by tag and reason) and the assembled messages of one byte sequence. */
const decode = (pieces: ReadonlyArray<Uint8Array>, wire: string) =>
  Effect.gen(function*() {
    const { make, provider } = decoders[wire]!
    const events: Array<ProviderEvent> = []
    const outcome = yield* decodeSse(Stream.fromIterable(pieces)).pipe(
      runDecoder(provider, make),
      Stream.runForEach((e) => Effect.sync(() => void events.push(e))),
      Effect.either
    )
    const [assembly] = stepAll(emptyAssembly, events)
    const failure = Either.isLeft(outcome) ? `${outcome.left._tag}:${"reason" in outcome.left ? outcome.left.reason : ""}` : "none"
    return { events, failure, messages: end(assembly).assembly.messages }
  })

const fixtures = Object.keys(decoders).flatMap((wire) =>
  Fs.readdirSync(Path.join(FIXTURES, "sse", wire)).map((file) => ({ wire, file, bytes: Fs.readFileSync(Path.join(FIXTURES, "sse", wire, file)) })))

describe("SSE decoding under random splits (seeded)", () => {
  for (const { bytes, file, wire } of fixtures) {
    it.effect(`${wire}/${file}: ${SPLITS_PER_FIXTURE} random splits decode exactly as one piece`, () =>
      Effect.gen(function*() {
        const whole = yield* decode([bytes], wire)
        assert.isAbove(whole.events.length + (whole.failure === "none" ? 0 : 1), 0)
        for (let seed = 1; seed <= SPLITS_PER_FIXTURE; seed++) {
          const pieces = split(bytes, seed * 7919 + bytes.length)
          const cut = yield* decode(pieces, wire)
          const where = `${wire}/${file}, seed ${seed} (${pieces.length} pieces)`
          assert.deepStrictEqual(cut.events, whole.events, where)
          assert.strictEqual(cut.failure, whole.failure, where)
          assert.deepStrictEqual(cut.messages, whole.messages, where)
        }
      }))
  }

  it.effect("tool-argument accumulation: argument deltas re-split at random give the same complete calls", () =>
    Effect.gen(function*() {
      const withCalls = fixtures.filter(({ bytes }) => bytes.includes("tool") || bytes.includes("function_call"))
      assert.isAbove(withCalls.length, 4)
      for (const { bytes, file, wire } of withCalls) {
        const whole = yield* decode([bytes], wire)
        if (!whole.events.some((e) => e._tag === "ToolCallDelta")) continue
        for (let seed = 1; seed <= SPLITS_PER_FIXTURE; seed++) {
          const random = prng(seed)
          const resplit = whole.events.flatMap((e): ReadonlyArray<ProviderEvent> => {
            if (e._tag !== "ToolCallDelta") return [e]
            const parts: Array<ProviderEvent> = []
            let at = 0
            while (at < e.argumentsDelta.length) {
              const size = 1 + Math.floor(random() * 6)
              parts.push({ ...e, argumentsDelta: e.argumentsDelta.slice(at, at + size) })
              at += size
            }
            return parts
          })
          const [assembly] = stepAll(emptyAssembly, resplit)
          assert.deepStrictEqual(end(assembly).assembly.messages, whole.messages, `${wire}/${file}, seed ${seed}`)
        }
      }
    }))

  it.effect("the splits really cut inside multi-byte characters and JSON strings", () =>
    Effect.sync(() => {
      const text = new TextEncoder().encode("data: {\"delta\":\"héllo — ✓\"}\n\n")
      const cuts = Array.from({ length: 50 }, (_, seed) => split(text, seed)).flatMap((pieces) => {
        const ends: Array<number> = []
        let at = 0
        for (const p of pieces) ends.push((at += p.length))
        return ends
      })
      // An offset in the middle of "é" (2 bytes) or "—"/"✓" (3 bytes) appears among the cuts.
      const inside = [...new Set(cuts)].filter((n) => n < text.length && (text[n]! & 0xc0) === 0x80)
      assert.isAbove(inside.length, 0)
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Anthropic from "../../src/services/provider/AnthropicDecoder.js"
import * as Chat from "../../src/services/provider/OpenAiChatDecoder.js"
import * as Responses from "../../src/services/provider/OpenAiResponsesDecoder.js"
import { FIXTURES, splitSse } from "../support/MockModelServer.js"

/**
 * Each decoder reads its most frequent event shapes without its schema (decodeData's `fast`). That
 * shortcut may only ever answer for JSON the schema accepts: checked on every event of the recorded
 * streams and on each field of those shapes given the wrong type.
 */

const recorded = (dirs: ReadonlyArray<string>): ReadonlyArray<unknown> =>
  dirs.flatMap((dir) =>
    Fs.readdirSync(Path.join(FIXTURES, "sse", dir)).flatMap((file) =>
      splitSse(Fs.readFileSync(Path.join(FIXTURES, "sse", dir, file), "utf8")).flatMap((event) => {
        const data = event.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n")
        try {
          return [JSON.parse(data) as unknown]
        } catch {
          return []
        }
      })
    )
  )

/** The value with one path replaced by each of a few wrong-typed values (and removed). */
const variants = (value: unknown, path: ReadonlyArray<string | number>): ReadonlyArray<unknown> =>
  [1, "x", null, true, [], {}, undefined].map((wrong) => {
    const copy = structuredClone(value) as Record<string | number, unknown>
    let at: Record<string | number, unknown> = copy
    for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>
    if (wrong === undefined) delete at[path.at(-1)!]
    else at[path.at(-1)!] = wrong
    return copy
  })

const check = <A, I>(schema: Schema.Schema<A, I>, fast: (json: unknown) => A | undefined, inputs: ReadonlyArray<unknown>) => {
  const decode = Schema.decodeUnknownEither(schema)
  let answered = 0
  for (const json of inputs) {
    if (fast(json) === undefined) continue
    answered++
    assert.isTrue(Either.isRight(decode(json)), `fast path accepted what the schema refuses: ${JSON.stringify(json)}`)
  }
  return answered
}

describe("decoders' fast paths", () => {
  it("Chat Completions: only JSON the schema accepts", () => {
    const text = { id: "c", choices: [{ index: 0, delta: { content: "hi" }, finish_reason: null }] }
    const inputs = [
      ...recorded(["openai-chat", "openai-compatible"]),
      text,
      ...variants(text, ["choices"]),
      ...variants(text, ["choices", 0]),
      ...variants(text, ["choices", 0, "index"]),
      ...variants(text, ["choices", 0, "delta"]),
      ...variants(text, ["choices", 0, "delta", "content"]),
      ...variants(text, ["choices", 0, "finish_reason"]),
      ...variants({ choices: [{ delta: { reasoning_content: "r" } }] }, ["choices", 0, "delta", "reasoning_content"]),
      ...variants({ choices: [{ delta: { refusal: "no" } }] }, ["choices", 0, "delta", "refusal"]),
      ...variants({ choices: [{ delta: { reasoning: "r" } }] }, ["choices", 0, "delta", "reasoning"]),
      ...variants({ choices: [], usage: { prompt_tokens: 1 } }, ["usage"])
    ]
    assert.isAbove(check(Chat.Chunk, Chat.fastChunk, inputs), 10)
  })

  it("Anthropic Messages: only JSON the schema accepts", () => {
    const text = { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } }
    const inputs = [
      ...recorded(["anthropic"]),
      ...variants(text, ["index"]),
      ...variants(text, ["delta"]),
      ...variants(text, ["delta", "type"]),
      ...variants(text, ["delta", "text"]),
      ...variants({ ...text, delta: { type: "thinking_delta", thinking: "t" } }, ["delta", "thinking"]),
      ...variants({ ...text, delta: { type: "input_json_delta", partial_json: "{" } }, ["delta", "partial_json"]),
      ...variants({ ...text, delta: { type: "signature_delta", signature: "s" } }, ["delta", "signature"])
    ]
    assert.isAbove(check(Anthropic.Event, Anthropic.fastEvent, inputs), 10)
  })

  it("OpenAI Responses: only JSON the schema accepts", () => {
    const text = { type: "response.output_text.delta", item_id: "m", output_index: 0, content_index: 0, delta: "hi" }
    const inputs = [...recorded(["openai-responses"]), ...variants(text, ["type"]), ...variants(text, ["delta"])]
    assert.isAbove(check(Responses.Event, Responses.fastEvent, inputs), 3)
  })
})

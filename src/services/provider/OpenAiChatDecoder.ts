import { Either, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { ProviderMalformed } from "../../domain/ProviderError.js"
import { classifyFailure, errorObjectOf, parseJsonBody } from "../../domain/ProviderErrorMapping.js"
import type { FinishReason, ProviderEvent } from "../../domain/ProviderEvent.js"
import { decodeData, isJsonObject } from "../Sse.js"
import { PROVIDER } from "./OpenAiChatRequest.js"
import { finishEvent, reasoningDelta, textDelta, usageEvent } from "./Usage.js"
import { type DecodeStep, step, type WireDecoder } from "./WireDecoder.js"

/** OpenAI Chat Completions (and every server that copies it): the stream decoder. */

const Str = Schema.optional(Schema.NullOr(Schema.String))
const Num = Schema.optional(Schema.NullOr(Schema.Number))

const ToolCallChunk = Schema.Struct({
  index: Num,
  id: Str,
  function: Schema.optional(Schema.NullOr(Schema.Struct({ name: Str, arguments: Str })))
})

/** One Chat Completions stream event, as far as Baton reads it. */
export const Chunk = Schema.Struct({
  model: Str,
  choices: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    index: Num,
    delta: Schema.optional(Schema.NullOr(Schema.Struct({
      content: Str,
      refusal: Str,
      // reasoning text of compatible servers: DeepSeek / vLLM / llama.cpp, and Groq / OpenRouter / Ollama
      reasoning_content: Str,
      reasoning: Str,
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(ToolCallChunk)))
    }))),
    finish_reason: Str
  })))),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    prompt_tokens: Num,
    completion_tokens: Num,
    total_tokens: Num,
    prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: Num })))
  })))
})
type Chunk = typeof Chunk.Type
type ToolCallChunk = typeof ToolCallChunk.Type

const isText = (value: unknown) => value === undefined || value === null || typeof value === "string"
const isCount = (value: unknown) => value === undefined || value === null || typeof value === "number"

/** The shape of nearly every event, text or reasoning and nothing else, checked without the schema (see decodeData). */
export const fastChunk = (json: unknown): Chunk | undefined => {
  if (!isJsonObject(json) || (json["usage"] !== undefined && json["usage"] !== null) || !Array.isArray(json["choices"])) return undefined
  for (const choice of json["choices"] as ReadonlyArray<unknown>) {
    if (!isJsonObject(choice) || !isCount(choice["index"]) || !isText(choice["finish_reason"])) return undefined
    const delta = choice["delta"]
    if (delta === undefined || delta === null) continue
    if (!isJsonObject(delta) || (delta["tool_calls"] !== undefined && delta["tool_calls"] !== null)) return undefined
    if (!isText(delta["content"]) || !isText(delta["refusal"]) || !isText(delta["reasoning_content"]) || !isText(delta["reasoning"])) return undefined
  }
  return json as Chunk
}

interface CallState {
  id: string
  idFromWire: boolean
  name: string
  started: boolean
  buffered: string
  args: string
  ended: boolean
}

const finishOf = (reason: string | null | undefined, sawCalls: boolean): FinishReason => {
  switch (reason) {
    case "tool_calls":
    case "function_call":
      return "tool_calls"
    case "stop":
      // Some compatible servers (older Ollama) report `stop` for a tool-call turn.
      return sawCalls ? "tool_calls" : "stop"
    case "length":
      return "length"
    default:
      return sawCalls ? "tool_calls" : "other"
  }
}

/**
 * Tool calls are keyed by `index`, tolerant of interleaved fragments, whole calls in one chunk (Ollama),
 * a first chunk without `arguments` (vLLM) and ids only on the first chunk. Calls end when the finish
 * reason arrives: with interleaving allowed, nothing earlier proves a call complete.
 */
export const makeChatDecoder = (options: {
  readonly secrets: ReadonlyArray<string>
  /** Prefix of fallback ids for servers that send a call without one; unique per stream so pairs never collide. */
  readonly newIdPrefix?: () => string
}) =>
(): WireDecoder => {
  const decode = decodeData(Chunk, PROVIDER, fastChunk)
  const idPrefix = options.newIdPrefix?.() ?? `call_${randomUUID().slice(0, 8)}`
  const calls: Array<CallState> = []
  const byIndex = new Map<number, CallState>()
  let finish: string | null | undefined
  let usage: ProviderEvent | undefined
  let model: string | undefined

  const start = (call: CallState, out: Array<ProviderEvent>) => {
    call.started = true
    out.push({ _tag: "ToolCallStart", id: call.id, name: call.name })
    if (call.buffered !== "") out.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: call.buffered })
    call.buffered = ""
  }

  const onToolChunk = (tc: ToolCallChunk, out: Array<ProviderEvent>) => {
    const wireId = tc.id != null && tc.id !== "" ? tc.id : undefined
    let call = tc.index != null ? byIndex.get(tc.index) : wireId === undefined ? calls.at(-1) : undefined
    if (call !== undefined && wireId !== undefined && call.idFromWire && call.id !== wireId) call = undefined
    if (call === undefined || call.ended) {
      call = {
        id: wireId ?? `${idPrefix}_${calls.length}`,
        idFromWire: wireId !== undefined,
        name: "",
        started: false,
        buffered: "",
        args: "",
        ended: false
      }
      calls.push(call)
    } else if (!call.started && wireId !== undefined && !call.idFromWire) {
      call.id = wireId
      call.idFromWire = true
    }
    if (tc.index != null) byIndex.set(tc.index, call)
    const name = tc.function?.name
    if (!call.started && name != null && name !== "") call.name = name
    const fragment = tc.function?.arguments ?? ""
    call.args += fragment
    if (call.started) {
      if (fragment !== "") out.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: fragment })
    } else {
      call.buffered += fragment
      if (call.name !== "") start(call, out)
    }
  }

  const endCalls = (out: Array<ProviderEvent>) => {
    for (const call of calls) {
      if (call.ended) continue
      if (!call.started) start(call, out)
      call.ended = true
      out.push({ _tag: "ToolCallEnd", id: call.id, name: call.name, arguments: call.args })
    }
  }

  const onChunk = (chunk: Chunk): DecodeStep => {
    // Every chunk names it; the first is enough.
    if (model === undefined && typeof chunk.model === "string") model = chunk.model
    const out: Array<ProviderEvent> = []
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue // Baton never asks for n > 1
      const delta = choice.delta
      if (delta != null) {
        out.push(...reasoningDelta((delta.reasoning_content ?? "") + (delta.reasoning ?? "")))
        out.push(...textDelta((delta.content ?? "") + (delta.refusal ?? "")))
        for (const tc of delta.tool_calls ?? []) onToolChunk(tc, out)
      }
      if (choice.finish_reason != null) {
        finish = choice.finish_reason
        endCalls(out)
      }
    }
    if (chunk.usage != null) {
      usage = usageEvent({
        input: chunk.usage.prompt_tokens,
        output: chunk.usage.completion_tokens,
        cached: chunk.usage.prompt_tokens_details?.cached_tokens,
        total: chunk.usage.total_tokens
      })
    }
    return step(out)
  }

  const failure = (data: string) =>
    Either.left(classifyFailure({
      provider: PROVIDER,
      error: errorObjectOf(parseJsonBody(data)),
      bodyText: data,
      secrets: options.secrets
    }))

  return {
    terminal: "data: [DONE]",
    onEvent: (event) => {
      if (event.event === "error") return failure(event.data)
      if (event.event !== "message") {
        return Either.left(
          new ProviderMalformed({ reason: "undecodable_event", message: `${PROVIDER}: unknown SSE event "${event.event}"` })
        )
      }
      if (event.data.trim() === "[DONE]") {
        const out: Array<ProviderEvent> = []
        endCalls(out)
        if (usage !== undefined) out.push(usage)
        out.push(finishEvent(finishOf(finish, calls.length > 0), model))
        return Either.right(step(out, true))
      }
      if (/^\s*\{\s*"error"\s*:/.test(event.data)) return failure(event.data)
      return Either.map(decode(event.data), onChunk)
    }
  }
}

import { Either, Schema } from "effect"
import type { ProviderError } from "../../domain/ProviderError.js"
import { classifyFailure, ErrorObject } from "../../domain/ProviderErrorMapping.js"
import type { FinishReason, ProviderEvent } from "../../domain/ProviderEvent.js"
import { PROVIDER, REDACTED_PROVIDER } from "./AnthropicRequest.js"
import { decodeData, isJsonObject } from "../Sse.js"
import { type DecodeStep, step, undecodable, type WireDecoder } from "./WireDecoder.js"
import { finishEvent, reasoningDelta, textDelta, usageEvent } from "./Usage.js"

/** Anthropic Messages stream decoder: every event type of the protocol is named here; anything else fails. */

const Num = Schema.optional(Schema.NullOr(Schema.Number))
const WireUsage = Schema.Struct({
  input_tokens: Num,
  output_tokens: Num,
  cache_creation_input_tokens: Num,
  cache_read_input_tokens: Num
})
type WireUsage = typeof WireUsage.Type

const Block = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("thinking"), thinking: Schema.optional(Schema.String), signature: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String }),
  Schema.Struct({ type: Schema.Literal("tool_use"), id: Schema.String, name: Schema.String, input: Schema.optional(Schema.Unknown) })
)

const Delta = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text_delta"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("thinking_delta"), thinking: Schema.String }),
  Schema.Struct({ type: Schema.Literal("signature_delta"), signature: Schema.String }),
  Schema.Struct({ type: Schema.Literal("input_json_delta"), partial_json: Schema.String }),
  // citations only arrive for document inputs, which Baton never sends; accepted so they are not errors
  Schema.Struct({ type: Schema.Literal("citations_delta") })
)

/** Every Messages stream event type, as far as Baton reads it. */
export const Event = Schema.Union(
  Schema.Struct({
    type: Schema.Literal("message_start"),
    message: Schema.Struct({ model: Schema.optional(Schema.NullOr(Schema.String)), usage: Schema.optional(WireUsage) })
  }),
  Schema.Struct({ type: Schema.Literal("content_block_start"), index: Schema.Number, content_block: Block }),
  Schema.Struct({ type: Schema.Literal("content_block_delta"), index: Schema.Number, delta: Delta }),
  Schema.Struct({ type: Schema.Literal("content_block_stop"), index: Schema.Number }),
  Schema.Struct({
    type: Schema.Literal("message_delta"),
    delta: Schema.Struct({ stop_reason: Schema.optional(Schema.NullOr(Schema.String)) }),
    usage: Schema.optional(Schema.NullOr(WireUsage))
  }),
  Schema.Struct({ type: Schema.Literal("message_stop") }),
  Schema.Struct({ type: Schema.Literal("ping") }),
  Schema.Struct({ type: Schema.Literal("error"), error: ErrorObject })
)
type Event = typeof Event.Type

/** What each streamed delta type carries (its one string field). */
const deltaFields: Readonly<Record<string, string>> = {
  text_delta: "text",
  thinking_delta: "thinking",
  signature_delta: "signature",
  input_json_delta: "partial_json"
}

/** A content_block_delta, nearly every event, checked without the schema (see decodeData). */
export const fastEvent = (json: unknown): Event | undefined => {
  if (!isJsonObject(json) || json["type"] !== "content_block_delta" || typeof json["index"] !== "number") return undefined
  const delta = json["delta"]
  if (!isJsonObject(delta) || typeof delta["type"] !== "string") return undefined
  const field = deltaFields[delta["type"]]
  return field !== undefined && typeof delta[field] === "string" ? json as Event : undefined
}

interface BlockState {
  readonly type: "text" | "thinking" | "redacted_thinking" | "tool_use"
  readonly id: string
  readonly name: string
  readonly input: unknown
  args: string
  signature: string
  open: boolean
}

const finishOf = (reason: string | null | undefined, sawCalls: boolean): FinishReason => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "tool_use":
      return "tool_calls"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length"
    default:
      return sawCalls ? "tool_calls" : "other"
  }
}

/**
 * Usage: Anthropic's `input_tokens` excludes cached tokens, so the reported input is
 * input + cache creation + cache read (the real prompt size, which compaction compares against the
 * window) and cachedInputTokens is the cache read. `message_delta` usage is cumulative and overrides.
 */
export const makeAnthropicDecoder = (options: { readonly secrets: ReadonlyArray<string> }) => (): WireDecoder => {
  const decode = decodeData(Event, PROVIDER, fastEvent)
  const blocks = new Map<number, BlockState>()
  let usage: WireUsage = {}
  let stopReason: string | null | undefined
  let sawCalls = false
  let model: string | null | undefined

  const close = (block: BlockState, out: Array<ProviderEvent>) => {
    block.open = false
    if (block.type === "thinking" && block.signature !== "") {
      out.push({ _tag: "ReasoningSignature", signature: block.signature, provider: PROVIDER })
    } else if (block.type === "tool_use") {
      if (block.args === "") {
        // no input_json_delta at all: the start block's `input` is the whole argument object; sent as one
        // delta so the deltas still add up to the final arguments
        block.args = JSON.stringify(block.input ?? {})
        out.push({ _tag: "ToolCallDelta", id: block.id, argumentsDelta: block.args })
      }
      out.push({ _tag: "ToolCallEnd", id: block.id, name: block.name, arguments: block.args })
    }
  }

  const onEvent = (event: Event): Either.Either<DecodeStep, ProviderError> => {
    const out: Array<ProviderEvent> = []
    switch (event.type) {
      case "ping":
        return Either.right(step(out))
      case "error":
        return Either.left(classifyFailure({ provider: PROVIDER, error: event.error, secrets: options.secrets }))
      case "message_start":
        usage = { ...usage, ...event.message.usage }
        model = event.message.model
        return Either.right(step(out))
      case "content_block_start": {
        const b = event.content_block
        const block: BlockState = {
          type: b.type,
          id: b.type === "tool_use" ? b.id : "",
          name: b.type === "tool_use" ? b.name : "",
          input: b.type === "tool_use" ? b.input : undefined,
          args: "",
          signature: b.type === "thinking" ? b.signature ?? "" : "",
          open: true
        }
        blocks.set(event.index, block)
        if (b.type === "text") out.push(...textDelta(b.text ?? ""))
        if (b.type === "thinking") out.push(...reasoningDelta(b.thinking ?? ""))
        if (b.type === "redacted_thinking") out.push({ _tag: "ReasoningSignature", signature: b.data, provider: REDACTED_PROVIDER })
        if (b.type === "tool_use") {
          sawCalls = true
          out.push({ _tag: "ToolCallStart", id: b.id, name: b.name })
        }
        return Either.right(step(out))
      }
      case "content_block_delta": {
        const block = blocks.get(event.index)
        if (block === undefined || !block.open) return undecodable(PROVIDER, `delta for block ${event.index}, which is not open`)
        const d = event.delta
        if (d.type === "text_delta") out.push(...textDelta(d.text))
        else if (d.type === "thinking_delta") out.push(...reasoningDelta(d.thinking))
        else if (d.type === "signature_delta") block.signature += d.signature
        else if (d.type === "input_json_delta" && d.partial_json !== "") {
          block.args += d.partial_json
          out.push({ _tag: "ToolCallDelta", id: block.id, argumentsDelta: d.partial_json })
        }
        return Either.right(step(out))
      }
      case "content_block_stop": {
        const block = blocks.get(event.index)
        if (block === undefined || !block.open) return undecodable(PROVIDER, `stop for block ${event.index}, which is not open`)
        close(block, out)
        return Either.right(step(out))
      }
      case "message_delta":
        stopReason = event.delta.stop_reason ?? stopReason
        if (event.usage != null) usage = { ...usage, ...stripNulls(event.usage) }
        return Either.right(step(out))
      case "message_stop": {
        // max_tokens can cut a block without its content_block_stop: close it so every call ends
        for (const block of blocks.values()) if (block.open) close(block, out)
        const cacheRead = usage.cache_read_input_tokens ?? 0
        out.push(usageEvent({
          input: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + cacheRead,
          output: usage.output_tokens,
          cached: cacheRead,
          cacheWrite: usage.cache_creation_input_tokens
        }))
        out.push(finishEvent(finishOf(stopReason, sawCalls), model))
        return Either.right(step(out, true))
      }
    }
  }

  return {
    terminal: "message_stop",
    onEvent: (sse) => Either.flatMap(decode(sse.data), onEvent)
  }
}

const stripNulls = (u: WireUsage): WireUsage =>
  Object.fromEntries(Object.entries(u).filter(([, v]) => v != null)) as WireUsage

import { Either, Schema } from "effect"
import type { ProviderError } from "../../domain/ProviderError.js"
import { classifyFailure, ErrorObject } from "../../domain/ProviderErrorMapping.js"
import type { ProviderEvent } from "../../domain/ProviderEvent.js"
import { PROVIDER } from "./OpenAiResponsesRequest.js"
import { decodeData, isJsonObject } from "../Sse.js"
import { type DecodeStep, step, undecodable, type WireDecoder } from "./WireDecoder.js"
import { finishEvent, reasoningDelta, textDelta, usageEvent } from "./Usage.js"

/** OpenAI Responses stream decoder: every event type Baton can receive is named; anything else fails. */

const Str = Schema.optional(Schema.NullOr(Schema.String))
const Num = Schema.optional(Schema.NullOr(Schema.Number))

const Item = Schema.Union(
  Schema.Struct({ type: Schema.Literal("message") }),
  Schema.Struct({ type: Schema.Literal("reasoning"), encrypted_content: Str }),
  Schema.Struct({ type: Schema.Literal("function_call"), id: Str, call_id: Schema.String, name: Schema.String, arguments: Str })
)

const Response = Schema.Struct({
  model: Str,
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    input_tokens: Num,
    output_tokens: Num,
    total_tokens: Num,
    input_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: Num })))
  }))),
  incomplete_details: Schema.optional(Schema.NullOr(Schema.Struct({ reason: Str }))),
  error: Schema.optional(Schema.NullOr(ErrorObject))
})
type Response = typeof Response.Type

const acknowledged = Schema.Literal(
  "response.created",
  "response.in_progress",
  "response.queued",
  "response.content_part.added",
  "response.content_part.done",
  "response.output_text.done",
  "response.output_text.annotation.added",
  "response.refusal.done",
  "response.reasoning_summary_part.done",
  "response.reasoning_summary_text.done",
  "response.reasoning_text.done",
  "response.function_call_arguments.done"
)

/** Every Responses stream event type, as far as Baton reads it. */
export const Event = Schema.Union(
  Schema.Struct({ type: acknowledged }),
  Schema.Struct({ type: Schema.Literal("response.output_item.added", "response.output_item.done"), output_index: Schema.Number, item: Item }),
  Schema.Struct({
    type: Schema.Literal(
      "response.output_text.delta",
      "response.refusal.delta",
      "response.reasoning_summary_text.delta",
      "response.reasoning_text.delta"
    ),
    delta: Schema.String
  }),
  Schema.Struct({ type: Schema.Literal("response.reasoning_summary_part.added"), summary_index: Schema.Number }),
  Schema.Struct({
    type: Schema.Literal("response.function_call_arguments.delta"),
    item_id: Str,
    output_index: Num,
    delta: Schema.String
  }),
  Schema.Struct({ type: Schema.Literal("response.completed", "response.incomplete", "response.failed"), response: Response }),
  Schema.Struct({ type: Schema.Literal("error"), error: Schema.optional(ErrorObject), code: Str, message: Str })
)
type Event = typeof Event.Type

const textDeltas: ReadonlySet<unknown> = new Set([
  "response.output_text.delta",
  "response.refusal.delta",
  "response.reasoning_summary_text.delta",
  "response.reasoning_text.delta"
])

/** A text, refusal or reasoning delta, nearly every event, checked without the schema (see decodeData). */
export const fastEvent = (json: unknown): Event | undefined =>
  isJsonObject(json) && textDeltas.has(json["type"]) && typeof json["delta"] === "string" ? json as Event : undefined

interface CallState {
  readonly id: string
  readonly name: string
  args: string
  ended: boolean
}

export const makeResponsesDecoder = (options: { readonly secrets: ReadonlyArray<string> }) => (): WireDecoder => {
  const decode = decodeData(Event, PROVIDER, fastEvent)
  const byItem = new Map<string, CallState>()
  const byOutput = new Map<number, CallState>()
  const calls: Array<CallState> = []

  const fail = (error: ErrorObject | null | undefined): Either.Either<DecodeStep, ProviderError> =>
    Either.left(classifyFailure({ provider: PROVIDER, error: error ?? undefined, secrets: options.secrets }))

  /**
   * The `done` item's arguments are final; when the deltas fell short of them the rest is sent as one more
   * delta, so the deltas always add up to the End's arguments. Arguments that contradict the deltas
   * would break that, so the streamed text wins then.
   */
  const end = (call: CallState, final: string | null | undefined, out: Array<ProviderEvent>) => {
    if (final != null && final !== call.args && final.startsWith(call.args)) {
      out.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: final.slice(call.args.length) })
      call.args = final
    }
    call.ended = true
    out.push({ _tag: "ToolCallEnd", id: call.id, name: call.name, arguments: call.args })
  }

  const finish = (response: Response, reason: "completed" | "incomplete", out: Array<ProviderEvent>) => {
    for (const call of calls) if (!call.ended) end(call, undefined, out)
    const u = response.usage
    if (u != null) {
      out.push(usageEvent({
        input: u.input_tokens,
        output: u.output_tokens,
        cached: u.input_tokens_details?.cached_tokens,
        total: u.total_tokens
      }))
    }
    out.push(finishEvent(
      reason === "incomplete"
        ? response.incomplete_details?.reason === "max_output_tokens" ? "length" : "other"
        : calls.length > 0
        ? "tool_calls"
        : "stop",
      response.model
    ))
    return Either.right(step(out, true))
  }

  const onEvent = (event: Event): Either.Either<DecodeStep, ProviderError> => {
    const out: Array<ProviderEvent> = []
    switch (event.type) {
      case "response.output_item.added": {
        if (event.item.type !== "function_call") return Either.right(step(out))
        const call: CallState = { id: event.item.call_id, name: event.item.name, args: "", ended: false }
        calls.push(call)
        if (event.item.id != null) byItem.set(event.item.id, call)
        byOutput.set(event.output_index, call)
        out.push({ _tag: "ToolCallStart", id: call.id, name: call.name })
        const whole = event.item.arguments ?? ""
        if (whole !== "") {
          call.args = whole
          out.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: whole })
        }
        return Either.right(step(out))
      }
      case "response.output_item.done": {
        const item = event.item
        if (item.type === "reasoning" && item.encrypted_content != null && item.encrypted_content !== "") {
          out.push({ _tag: "ReasoningSignature", signature: item.encrypted_content, provider: PROVIDER })
        }
        if (item.type === "function_call") {
          const call = (item.id != null ? byItem.get(item.id) : undefined) ?? byOutput.get(event.output_index)
          if (call === undefined) return undecodable(PROVIDER, `function_call ${item.call_id} done without being added`)
          if (!call.ended) end(call, item.arguments, out)
        }
        return Either.right(step(out))
      }
      case "response.output_text.delta":
      case "response.refusal.delta":
        return Either.right(step(textDelta(event.delta)))
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        return Either.right(step(reasoningDelta(event.delta)))
      case "response.reasoning_summary_part.added":
        // summary parts are separate paragraphs of one reasoning text
        return Either.right(step(event.summary_index > 0 ? reasoningDelta("\n\n") : []))
      case "response.function_call_arguments.delta": {
        const call = (event.item_id != null ? byItem.get(event.item_id) : undefined) ??
          (event.output_index != null ? byOutput.get(event.output_index) : undefined)
        if (call === undefined || call.ended) return undecodable(PROVIDER, `arguments for unknown call ${event.item_id}`)
        call.args += event.delta
        return Either.right(step(event.delta === "" ? [] : [{ _tag: "ToolCallDelta", id: call.id, argumentsDelta: event.delta }]))
      }
      case "response.completed":
        return finish(event.response, "completed", out)
      case "response.incomplete":
        return finish(event.response, "incomplete", out)
      case "response.failed":
        return fail(event.response.error ?? { type: "server_error", message: "response.failed without an error" })
      case "error":
        return fail(event.error ?? { code: event.code, message: event.message })
      default:
        return Either.right(step(out))
    }
  }

  return {
    terminal: "response.completed",
    onEvent: (sse) => Either.flatMap(decode(sse.data), onEvent)
  }
}

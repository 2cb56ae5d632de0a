import type { TaskEvent, TokenUsage } from "./Events.js"
import { ToolCallId } from "./Ids.js"
import type { AssistantMessage, ReasoningMessage, ToolCall } from "./Messages.js"
import type { FinishReason, ProviderEvent } from "./ProviderEvent.js"

/**
 * Turns one model request's provider events into the run's stream items: deltas as they come,
 * each message complete right after its last delta, token usage held back to be the last model
 * item. Pure: `step` over events (`stepAll` over a chunk of them), then `end` when the provider
 * stream finished.
 */
export type CompleteMessage = AssistantMessage | ReasoningMessage | ToolCall

interface OpenCall {
  readonly id: string
  readonly name: string
  readonly args: string
}

export interface Assembly {
  readonly text: string | undefined
  readonly reasoning: string | undefined
  readonly calls: ReadonlyArray<OpenCall>
  /** Complete messages of this request, in arrival order. */
  readonly messages: ReadonlyArray<CompleteMessage>
  readonly usage: TokenUsage | undefined
  readonly finish: FinishReason | undefined
  /** The model that answered, when the provider said (Finish). */
  readonly model?: string
}

export const emptyAssembly: Assembly = {
  text: undefined,
  reasoning: undefined,
  calls: [],
  messages: [],
  usage: undefined,
  finish: undefined
}

type Step = readonly [Assembly, ReadonlyArray<TaskEvent>]

const closeText = (s: Assembly): Step => {
  if (s.text === undefined) return [s, []]
  const message: AssistantMessage = { type: "assistant_message", content: s.text }
  return [{ ...s, text: undefined, messages: [...s.messages, message] }, [message]]
}

const closeReasoning = (s: Assembly, signature?: { readonly signature: string; readonly provider: string }): Step => {
  if (s.reasoning === undefined && signature === undefined) return [s, []]
  const message: ReasoningMessage = {
    type: "reasoning_message",
    content: s.reasoning ?? "",
    ...(signature !== undefined ? { signature: signature.signature, provider: signature.provider } : {})
  }
  return [{ ...s, reasoning: undefined, messages: [...s.messages, message] }, [message]]
}

const closeBoth = (s: Assembly): Step => {
  const [a, e1] = closeText(s)
  const [b, e2] = closeReasoning(a)
  return [b, [...e1, ...e2]]
}

const withCall = (s: Assembly, id: string, name: string): [Assembly, OpenCall] => {
  const found = s.calls.find((c) => c.id === id)
  if (found !== undefined) return [s, found]
  const call = { id, name, args: "" }
  return [{ ...s, calls: [...s.calls, call] }, call]
}

const replaceCall = (s: Assembly, call: OpenCall): Assembly => ({
  ...s,
  calls: s.calls.map((c) => (c.id === call.id ? call : c))
})

/** A call this request already completed: a provider that repeats its id is heard once (one pending call, one result). */
const completed = (s: Assembly, id: string): boolean => s.messages.some((m) => m.type === "tool_call" && m.tool_call_id === id)

export const step = (s: Assembly, event: ProviderEvent): Step => {
  if ((event._tag === "ToolCallStart" || event._tag === "ToolCallDelta" || event._tag === "ToolCallEnd") && completed(s, event.id)) return [s, []]
  switch (event._tag) {
    case "TextDelta": {
      if (event.text.length === 0) return [s, []]
      const [a, closed] = closeReasoning(s)
      return [{ ...a, text: (a.text ?? "") + event.text }, [...closed, { type: "text_delta", content: event.text }]]
    }
    case "ReasoningDelta": {
      if (event.text.length === 0) return [s, []]
      const [a, closed] = closeText(s)
      return [{ ...a, reasoning: (a.reasoning ?? "") + event.text }, [...closed, { type: "reasoning_delta", content: event.text }]]
    }
    case "ReasoningSignature": {
      const [a, closed] = closeText(s)
      const [b, reasoning] = closeReasoning(a, event)
      return [b, [...closed, ...reasoning]]
    }
    case "ToolCallStart": {
      const [a, closed] = closeBoth(s)
      return [withCall(a, event.id, event.name)[0], closed]
    }
    case "ToolCallDelta": {
      if (event.argumentsDelta.length === 0) return [s, []]
      const [a, closed] = closeBoth(s)
      const [b, call] = withCall(a, event.id, "")
      const next = { ...call, args: call.args + event.argumentsDelta }
      return [
        replaceCall(b, next),
        [...closed, { type: "tool_call_delta", tool_call_id: ToolCallId.make(event.id), name: next.name, arguments: event.argumentsDelta }]
      ]
    }
    case "ToolCallEnd": {
      const [a, closed] = closeBoth(s)
      const [b, call] = withCall(a, event.id, event.name)
      // Keep "deltas concatenate to the message": send the part of the final arguments no delta carried.
      const rest = event.arguments.startsWith(call.args) ? event.arguments.slice(call.args.length) : ""
      const id = ToolCallId.make(event.id)
      const message: ToolCall = { type: "tool_call", tool_call_id: id, name: event.name, arguments: event.arguments }
      const delta: ReadonlyArray<TaskEvent> = rest.length > 0
        ? [{ type: "tool_call_delta", tool_call_id: id, name: event.name, arguments: rest }]
        : []
      return [
        { ...b, calls: b.calls.filter((c) => c.id !== event.id), messages: [...b.messages, message] },
        [...closed, ...delta, message]
      ]
    }
    case "Usage":
      return [{
        ...s,
        usage: {
          type: "token_usage",
          input_tokens: event.inputTokens,
          output_tokens: event.outputTokens,
          cached_input_tokens: event.cachedInputTokens,
          total_tokens: event.totalTokens
        }
      }, []]
    case "Finish": {
      const [a, closed] = closeBoth(s)
      return [{ ...a, finish: event.reason, ...(event.model !== undefined ? { model: event.model } : {}) }, closed]
    }
  }
}

/**
 * `step` over the events one provider chunk carried (one network read): the assembly after all of
 * them and everything they emitted, in order, so a run commits once per chunk rather than per event.
 */
export const stepAll = (s: Assembly, events: Iterable<ProviderEvent>): Step => {
  let assembly = s
  const out: Array<TaskEvent> = []
  // A stretch of deltas of one kind (nearly every event of a batch) grows the open text in one
  // piece: the same assembly as stepping them one by one, made once instead of once per delta.
  let open: "text" | "reasoning" | undefined
  let grown = ""
  const settle = () => {
    if (open === undefined) return
    assembly = open === "text"
      ? { ...assembly, text: (assembly.text ?? "") + grown }
      : { ...assembly, reasoning: (assembly.reasoning ?? "") + grown }
    open = undefined
    grown = ""
  }
  for (const event of events) {
    const kind = event._tag === "TextDelta" ? "text" : event._tag === "ReasoningDelta" ? "reasoning" : undefined
    // Either kind closes the other: only a delta with nothing of the other kind open stays in the stretch.
    if (
      (event._tag === "TextDelta" || event._tag === "ReasoningDelta") && kind !== undefined &&
      (open === kind || (open === undefined && assembly[kind === "text" ? "reasoning" : "text"] === undefined))
    ) {
      if (event.text.length === 0) continue
      open = kind
      grown += event.text
      out.push({ type: kind === "text" ? "text_delta" : "reasoning_delta", content: event.text })
      continue
    }
    settle()
    const [next, emitted] = step(assembly, event)
    assembly = next
    for (const e of emitted) out.push(e)
  }
  settle()
  return [assembly, out]
}

export type Outcome = "tool_calls" | "max_tokens" | "end_turn" | "empty"

/** A request's model output once its provider stream has ended. */
export interface Ended {
  readonly assembly: Assembly
  readonly events: ReadonlyArray<TaskEvent>
  readonly outcome: Outcome
}

/** Closes what is open when the provider stream has ended; the usage comes last. */
export const end = (s: Assembly): Ended => {
  const [a, closed] = closeBoth(s)
  const closedAll = { ...a, calls: [] }
  const events = a.usage !== undefined ? [...closed, a.usage] : closed
  return { assembly: closedAll, events, outcome: outcomeOf(closedAll) }
}

export const toolCallsOf = (s: Assembly): ReadonlyArray<ToolCall> =>
  s.messages.filter((m): m is ToolCall => m.type === "tool_call")

const outcomeOf = (s: Assembly): Outcome => {
  if (toolCallsOf(s).length > 0) return "tool_calls"
  if (s.finish === "length") return "max_tokens"
  const said = s.messages.some((m) => m.type === "assistant_message" && m.content.trim().length > 0)
  return said ? "end_turn" : "empty"
}

/** Everything the model produced so far, open parts included: what a retry or an abort carries over. */
export const partial = (s: Assembly): { readonly text: string; readonly toolCalls: ReadonlyArray<ToolCall> } => {
  const texts = s.messages.filter((m): m is AssistantMessage => m.type === "assistant_message").map((m) => m.content)
  return { text: [...texts, ...(s.text !== undefined ? [s.text] : [])].join(""), toolCalls: toolCallsOf(s) }
}

/**
 * Renders a provider-neutral Scenario as the SSE events of each wire format, the way the real APIs
 * frame them. Used by MockModelServer; one event string per SSE event, each ending in a blank line.
 */

export interface ScenarioToolCall {
  readonly id: string
  readonly name: string
  /** A JSON value, or a string sent verbatim (use a string to send invalid JSON). */
  readonly args: unknown
}

export interface Scenario {
  /** The answer text; an array gives the exact delta split. */
  readonly text?: string | ReadonlyArray<string> | undefined
  readonly reasoning?: { readonly text: string; readonly signature?: string | undefined } | undefined
  readonly toolCalls?: ReadonlyArray<ScenarioToolCall> | undefined
  /** Defaults to `tool_calls` when there are tool calls, `stop` otherwise. */
  readonly finish?: "stop" | "tool_calls" | "length" | undefined
  readonly usage?: { readonly input: number; readonly output: number; readonly cached?: number } | undefined
}

export type Wire = "openai-chat" | "anthropic" | "openai-responses"

const DEFAULT_USAGE = { input: 10, output: 5, cached: 0 }

const argsText = (args: unknown): string => (typeof args === "string" ? args : JSON.stringify(args))

const split = (text: string): Array<string> => text.match(/\S+\s*|\s+/g) ?? []

const pieces = (text: string | ReadonlyArray<string> | undefined): Array<string> =>
  text === undefined ? [] : typeof text === "string" ? split(text) : [...text]

const halves = (s: string): Array<string> => {
  if (s.length < 2) return [s]
  const mid = Math.floor(s.length / 2)
  return [s.slice(0, mid), s.slice(mid)]
}

const finishOf = (s: Scenario) => s.finish ?? ((s.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop")

const data = (json: unknown) => `data: ${JSON.stringify(json)}\n\n`
const named = (json: { readonly type: string; readonly [key: string]: unknown }) => `event: ${json.type}\n${data(json)}`

export const renderChat = (s: Scenario, model: string): Array<string> => {
  const usage = s.usage ?? DEFAULT_USAGE
  const chunk = (delta: unknown, finish: string | null = null) =>
    data({
      id: "chatcmpl-mock",
      object: "chat.completion.chunk",
      created: 0,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }]
    })
  const out = [chunk({ role: "assistant", content: "" })]
  for (const r of pieces(s.reasoning?.text)) out.push(chunk({ reasoning_content: r }))
  for (const t of pieces(s.text)) out.push(chunk({ content: t }))
  s.toolCalls?.forEach((call, index) => {
    out.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }))
    for (const part of halves(argsText(call.args))) {
      out.push(chunk({ tool_calls: [{ index, function: { arguments: part } }] }))
    }
  })
  const finish = finishOf(s)
  out.push(chunk({}, finish))
  out.push(data({
    id: "chatcmpl-mock",
    object: "chat.completion.chunk",
    created: 0,
    model,
    choices: [],
    usage: {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: usage.cached ?? 0 }
    }
  }))
  out.push("data: [DONE]\n\n")
  return out
}

export const renderAnthropic = (s: Scenario, model: string): Array<string> => {
  const usage = s.usage ?? DEFAULT_USAGE
  const out = [named({
    type: "message_start",
    message: {
      id: "msg_mock",
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input - (usage.cached ?? 0),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: usage.cached ?? 0,
        output_tokens: 1
      }
    }
  })]
  let index = 0
  const block = (start: unknown, deltas: ReadonlyArray<unknown>) => {
    out.push(named({ type: "content_block_start", index, content_block: start }))
    for (const delta of deltas) out.push(named({ type: "content_block_delta", index, delta }))
    out.push(named({ type: "content_block_stop", index }))
    index++
  }
  if (s.reasoning !== undefined) {
    block({ type: "thinking", thinking: "", signature: "" }, [
      ...pieces(s.reasoning.text).map((thinking) => ({ type: "thinking_delta", thinking })),
      ...(s.reasoning.signature !== undefined ? [{ type: "signature_delta", signature: s.reasoning.signature }] : [])
    ])
  }
  if (s.text !== undefined) block({ type: "text", text: "" }, pieces(s.text).map((text) => ({ type: "text_delta", text })))
  out.push(named({ type: "ping" }))
  for (const call of s.toolCalls ?? []) {
    block(
      { type: "tool_use", id: call.id, name: call.name, input: {} },
      ["", ...halves(argsText(call.args))].map((partial_json) => ({ type: "input_json_delta", partial_json }))
    )
  }
  const stop = { stop: "end_turn", tool_calls: "tool_use", length: "max_tokens" }[finishOf(s)]
  out.push(named({ type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output } }))
  out.push(named({ type: "message_stop" }))
  return out
}

export const renderResponses = (s: Scenario, model: string): Array<string> => {
  const usage = s.usage ?? DEFAULT_USAGE
  const response = (status: string, extra: Record<string, unknown> = {}) => ({
    id: "resp_mock",
    object: "response",
    status,
    model,
    output: [],
    ...extra
  })
  const out = [named({ type: "response.created", response: response("in_progress") })]
  let output_index = 0
  if (s.reasoning !== undefined) {
    const item = { id: "rs_mock", type: "reasoning", summary: [] }
    out.push(named({ type: "response.output_item.added", output_index, item }))
    out.push(named({ type: "response.reasoning_summary_part.added", item_id: "rs_mock", output_index, summary_index: 0 }))
    for (const delta of pieces(s.reasoning.text)) {
      out.push(named({ type: "response.reasoning_summary_text.delta", item_id: "rs_mock", output_index, summary_index: 0, delta }))
    }
    out.push(named({
      type: "response.output_item.done",
      output_index,
      item: { ...item, encrypted_content: s.reasoning.signature ?? null }
    }))
    output_index++
  }
  if (s.text !== undefined) {
    const item = { id: "msg_mock", type: "message", role: "assistant", status: "in_progress", content: [] }
    out.push(named({ type: "response.output_item.added", output_index, item }))
    for (const delta of pieces(s.text)) {
      out.push(named({ type: "response.output_text.delta", item_id: "msg_mock", output_index, content_index: 0, delta }))
    }
    out.push(named({ type: "response.output_item.done", output_index, item: { ...item, status: "completed" } }))
    output_index++
  }
  for (const call of s.toolCalls ?? []) {
    const item_id = `fc_mock_${output_index}`
    const item = { id: item_id, type: "function_call", call_id: call.id, name: call.name, arguments: "" }
    out.push(named({ type: "response.output_item.added", output_index, item }))
    for (const delta of halves(argsText(call.args))) {
      out.push(named({ type: "response.function_call_arguments.delta", item_id, output_index, delta }))
    }
    out.push(named({ type: "response.output_item.done", output_index, item: { ...item, arguments: argsText(call.args) } }))
    output_index++
  }
  const wireUsage = {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached ?? 0 },
    output_tokens: usage.output,
    total_tokens: usage.input + usage.output
  }
  out.push(
    finishOf(s) === "length"
      ? named({
        type: "response.incomplete",
        response: response("incomplete", { usage: wireUsage, incomplete_details: { reason: "max_output_tokens" } })
      })
      : named({ type: "response.completed", response: response("completed", { usage: wireUsage }) })
  )
  return out
}

export const render = (wire: Wire, s: Scenario, model: string): Array<string> =>
  wire === "openai-chat" ? renderChat(s, model) : wire === "anthropic" ? renderAnthropic(s, model) : renderResponses(s, model)

import { Context, Effect, Layer, Stream, SubscriptionRef } from "effect"
import type { ProviderError } from "../../domain/ProviderError.js"
import type { FinishReason, ProviderEvent, ProviderRequest } from "../../domain/ProviderEvent.js"
import { Provider } from "../Provider.js"

/**
 * A deterministic Provider for tests: each `stream` call consumes the next scripted Turn.
 *
 *   const layer = layerScripted([
 *     Turn.toolCalls([{ id: "c1", name: "Read", args: { path: "a.txt" } }]),   // call 1
 *     Turn.fail(new ProviderServerError({ status: 503, message: "down" }), { text: "partial" }),
 *     Turn.text("done")                                                         // call 3
 *   ])
 *   const script = yield* ProviderScript      // requests received, await the n-th call, push more turns
 *
 * Running out of script is a defect naming the request: a test that makes an unplanned model call is wrong.
 */

export type TurnEnd =
  | { readonly _tag: "Complete" }
  | { readonly _tag: "Fail"; readonly error: ProviderError }
  | { readonly _tag: "Stall" }

export interface Turn {
  readonly events: ReadonlyArray<ProviderEvent>
  readonly end: TurnEnd
}

/** A turn, or a function choosing one from the request (`index` counts calls from 1). */
export type ScriptEntry = Turn | ((request: ProviderRequest, index: number) => Turn)

export interface ToolCallSpec {
  readonly id: string
  readonly name: string
  /** Serialized with JSON.stringify; a string is sent verbatim (use one for invalid JSON). Default `{}`. */
  readonly args?: unknown
}

export interface UsageNumbers {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cachedInputTokens: number
  readonly totalTokens: number
}

export interface TurnOptions {
  /** A string is one delta; an array gives the exact delta split. */
  readonly text?: string | ReadonlyArray<string>
  readonly reasoning?: string | {
    readonly text: string | ReadonlyArray<string>
    readonly signature?: string
    /** Defaults to "anthropic" when a signature is given. */
    readonly provider?: string
  }
  readonly toolCalls?: ReadonlyArray<ToolCallSpec>
  /** Partial numbers fill in from `Turn.defaultUsage` (total = input + output); `null` sends no Usage. */
  readonly usage?: Partial<UsageNumbers> | null
  /** Defaults to `tool_calls` with tool calls, `stop` otherwise. */
  readonly finish?: FinishReason
}

const deltas = (text: string | ReadonlyArray<string>): ReadonlyArray<string> => (typeof text === "string" ? [text] : text)

const argsText = (args: unknown): string => (args === undefined ? "{}" : typeof args === "string" ? args : JSON.stringify(args))

const complete: TurnEnd = { _tag: "Complete" }

const defaultUsage: UsageNumbers = { inputTokens: 10, outputTokens: 5, cachedInputTokens: 0, totalTokens: 15 }

const usageOf = (usage: Partial<UsageNumbers>): ProviderEvent => {
  const inputTokens = usage.inputTokens ?? defaultUsage.inputTokens
  const outputTokens = usage.outputTokens ?? defaultUsage.outputTokens
  return {
    _tag: "Usage",
    inputTokens,
    outputTokens,
    cachedInputTokens: usage.cachedInputTokens ?? 0,
    totalTokens: usage.totalTokens ?? inputTokens + outputTokens
  }
}

const output = (options: TurnOptions): Array<ProviderEvent> => {
  const events: Array<ProviderEvent> = []
  const r = options.reasoning
  if (r !== undefined) {
    const spec = typeof r === "string" ? { text: r } : r
    for (const text of deltas(spec.text)) events.push({ _tag: "ReasoningDelta", text })
    if (spec.signature !== undefined) {
      events.push({ _tag: "ReasoningSignature", signature: spec.signature, provider: spec.provider ?? "anthropic" })
    }
  }
  if (options.text !== undefined) for (const text of deltas(options.text)) events.push({ _tag: "TextDelta", text })
  for (const call of options.toolCalls ?? []) {
    const args = argsText(call.args)
    events.push({ _tag: "ToolCallStart", id: call.id, name: call.name })
    events.push({ _tag: "ToolCallDelta", id: call.id, argumentsDelta: args })
    events.push({ _tag: "ToolCallEnd", id: call.id, name: call.name, arguments: args })
  }
  return events
}

const partialEvents = (partial: TurnOptions | ReadonlyArray<ProviderEvent>): ReadonlyArray<ProviderEvent> =>
  Array.isArray(partial) ? partial : output(partial as TurnOptions)

export const Turn = {
  defaultUsage,
  /** Reasoning, then text, then tool calls (Start, one Delta, End each), then Usage and Finish. */
  make: (options: TurnOptions): Turn => ({
    events: [
      ...output(options),
      ...(options.usage === null ? [] : [usageOf(options.usage ?? {})]),
      { _tag: "Finish", reason: options.finish ?? ((options.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop") }
    ],
    end: complete
  }),
  text: (text: string | ReadonlyArray<string>, options: Omit<TurnOptions, "text"> = {}): Turn =>
    Turn.make({ ...options, text }),
  toolCalls: (toolCalls: ReadonlyArray<ToolCallSpec>, options: Omit<TurnOptions, "toolCalls"> = {}): Turn =>
    Turn.make({ ...options, toolCalls }),
  /** Exactly these events, then `end` (default: complete). */
  events: (events: ReadonlyArray<ProviderEvent>, end: TurnEnd = complete): Turn => ({ events, end }),
  /** Optional partial output (no Usage / Finish), then the failure. */
  fail: (error: ProviderError, partial: TurnOptions | ReadonlyArray<ProviderEvent> = []): Turn => ({
    events: partialEvents(partial),
    end: { _tag: "Fail", error }
  }),
  /** Optional partial output, then silence: the stream never ends (a test interrupts it or times it out). */
  stall: (partial: TurnOptions | ReadonlyArray<ProviderEvent> = []): Turn => ({
    events: partialEvents(partial),
    end: { _tag: "Stall" }
  }),
  /** The first `n` events of `turn`, then the failure (e.g. a tool call cut before its End). */
  cut: (turn: Turn, n: number, error: ProviderError): Turn => ({
    events: turn.events.slice(0, n),
    end: { _tag: "Fail", error }
  })
}

export const turnStream = (turn: Turn): Stream.Stream<ProviderEvent, ProviderError> => {
  // one event per chunk, so consumers observe arrival order as they would on a network
  const events = Stream.fromIterable(turn.events).pipe(Stream.rechunk(1))
  switch (turn.end._tag) {
    case "Complete":
      return events
    case "Fail":
      return Stream.concat(events, Stream.fail(turn.end.error))
    case "Stall":
      return Stream.concat(events, Stream.never)
  }
}

/** Test access to a scripted provider. */
export class ProviderScript extends Context.Tag("baton/ProviderScript")<ProviderScript, {
  /** Every request received so far, in call order. */
  readonly requests: Effect.Effect<ReadonlyArray<ProviderRequest>>
  /** Waits until at least `n` calls have started (then returns all requests so far). */
  readonly awaitRequests: (n: number) => Effect.Effect<ReadonlyArray<ProviderRequest>>
  /** Appends turns to the script. */
  readonly push: (...entries: ReadonlyArray<ScriptEntry>) => Effect.Effect<void>
  /** Turns not yet consumed. */
  readonly remaining: Effect.Effect<number>
}>() {}

const describe = (request: ProviderRequest): string => {
  const last = request.history.at(-1)
  const text = last !== undefined && "content" in last ? last.content.slice(0, 60) : ""
  return `${request.history.length} history items, last ${last?.type ?? "none"}${text !== "" ? `: "${text}"` : ""}`
}

export const makeScripted = (script: ReadonlyArray<ScriptEntry>) =>
  Effect.gen(function*() {
    const queue: Array<ScriptEntry> = [...script]
    const received = yield* SubscriptionRef.make<ReadonlyArray<ProviderRequest>>([])
    const provider = Provider.of({
      stream: (request) =>
        Stream.unwrap(Effect.gen(function*() {
          const all = yield* SubscriptionRef.updateAndGet(received, (rs) => [...rs, request])
          const entry = queue.shift()
          if (entry === undefined) {
            return yield* Effect.dieMessage(
              `ProviderScripted: no scripted turn left for call #${all.length} (${describe(request)})`
            )
          }
          return turnStream(typeof entry === "function" ? entry(request, all.length) : entry)
        }))
    })
    const script$ = ProviderScript.of({
      requests: SubscriptionRef.get(received),
      awaitRequests: (n) =>
        received.changes.pipe(
          Stream.filter((rs) => rs.length >= n),
          Stream.runHead,
          Effect.map((found) => (found._tag === "Some" ? found.value : []))
        ),
      push: (...entries) => Effect.sync(() => void queue.push(...entries)),
      remaining: Effect.sync(() => queue.length)
    })
    return { provider, script: script$ } as const
  })

/** Provides both the Provider and its ProviderScript handle. */
export const layerScripted = (script: ReadonlyArray<ScriptEntry>): Layer.Layer<Provider | ProviderScript> =>
  Layer.effectContext(
    Effect.map(makeScripted(script), ({ provider, script }) =>
      Context.make(Provider, provider).pipe(Context.add(ProviderScript, script)))
  )

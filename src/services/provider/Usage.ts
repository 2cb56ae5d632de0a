import type { FinishReason, ProviderEvent } from "../../domain/ProviderEvent.js"

/** Helpers shared by the wire decoders: event constructors with the invariants the Schema asserts. */

const count = (n: number | null | undefined): number => (n == null || !Number.isFinite(n) ? 0 : Math.max(0, Math.round(n)))

export const usageEvent = (u: {
  readonly input: number | null | undefined
  readonly output: number | null | undefined
  readonly cached?: number | null | undefined
  readonly total?: number | null | undefined
  readonly cacheWrite?: number | null | undefined
}): ProviderEvent => {
  const inputTokens = count(u.input)
  const outputTokens = count(u.output)
  return {
    _tag: "Usage",
    inputTokens,
    outputTokens,
    cachedInputTokens: count(u.cached),
    totalTokens: u.total == null ? inputTokens + outputTokens : count(u.total),
    ...(u.cacheWrite != null && count(u.cacheWrite) > 0 ? { cacheWriteTokens: count(u.cacheWrite) } : {})
  }
}

export const finishEvent = (reason: FinishReason, model?: string | null): ProviderEvent =>
  model == null || model === "" ? { _tag: "Finish", reason } : { _tag: "Finish", reason, model }

export const textDelta = (text: string): ReadonlyArray<ProviderEvent> => (text === "" ? [] : [{ _tag: "TextDelta", text }])

export const reasoningDelta = (text: string): ReadonlyArray<ProviderEvent> =>
  text === "" ? [] : [{ _tag: "ReasoningDelta", text }]

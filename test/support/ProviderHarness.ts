import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Effect, Either, Option, Redacted, type Scope, Stream } from "effect"
import { Otid, ToolCallId } from "../../src/domain/Ids.js"
import type { AssistantMessage, ReasoningMessage, ToolCall, ToolReturn, UserMessage } from "../../src/domain/Messages.js"
import type { ProviderError } from "../../src/domain/ProviderError.js"
import type { ProviderEvent, ProviderRequest } from "../../src/domain/ProviderEvent.js"
import type { Provider } from "../../src/services/Provider.js"
import * as ProviderAnthropic from "../../src/services/provider/Anthropic.js"
import type { LiveSettings } from "../../src/services/provider/Http.js"
import * as ProviderOpenAiChat from "../../src/services/provider/OpenAiChat.js"
import * as ProviderOpenAiResponses from "../../src/services/provider/OpenAiResponses.js"
import * as MockModelServer from "./MockModelServer.js"
import type { Wire } from "./MockWire.js"

/** Small builders and runners shared by the Provider suites. */

export const user = (content: string, otid = "u1"): UserMessage => ({ type: "user_message", content, otid: Otid.make(otid) })
export const assistant = (content: string): AssistantMessage => ({ type: "assistant_message", content })
export const call = (id: string, name: string, args: string): ToolCall => ({
  type: "tool_call",
  tool_call_id: ToolCallId.make(id),
  name,
  arguments: args
})
export const result = (id: string, content: string, status: "success" | "error" | "denied" = "success"): ToolReturn => ({
  type: "tool_return",
  tool_call_id: ToolCallId.make(id),
  status,
  content,
  otid: Otid.make(`r-${id}`)
})
export const reasoning = (content: string, signature?: string, provider?: string): ReasoningMessage => ({
  type: "reasoning_message",
  content,
  ...(signature !== undefined ? { signature } : {}),
  ...(provider !== undefined ? { provider } : {})
})

export const request = (overrides: Partial<ProviderRequest> = {}): ProviderRequest => ({
  system: "You are a test.",
  history: [user("hi")],
  tools: [],
  ...overrides
})

export interface Outcome {
  readonly events: ReadonlyArray<ProviderEvent>
  readonly error: ProviderError | undefined
}

/** Runs a stream to its end, keeping the events that arrived before a failure. */
export const run = (stream: Stream.Stream<ProviderEvent, ProviderError>): Effect.Effect<Outcome> =>
  Effect.gen(function*() {
    const events: Array<ProviderEvent> = []
    const exit = yield* stream.pipe(Stream.runForEach((e) => Effect.sync(() => events.push(e))), Effect.either)
    return { events, error: Either.isLeft(exit) ? exit.left : undefined }
  })

/** Joins consecutive deltas of the same kind (and same call), so long streams compare as a short exact list. */
export const collapse = (events: ReadonlyArray<ProviderEvent>): Array<ProviderEvent> => {
  const out: Array<ProviderEvent> = []
  for (const e of events) {
    const last = out.at(-1)
    if (last?._tag === "TextDelta" && e._tag === "TextDelta") out[out.length - 1] = { ...last, text: last.text + e.text }
    else if (last?._tag === "ReasoningDelta" && e._tag === "ReasoningDelta") {
      out[out.length - 1] = { ...last, text: last.text + e.text }
    } else if (last?._tag === "ToolCallDelta" && e._tag === "ToolCallDelta" && last.id === e.id) {
      out[out.length - 1] = { ...last, argumentsDelta: last.argumentsDelta + e.argumentsDelta }
    } else out.push(e)
  }
  return out
}

export const TEST_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"

export const settings = (baseUrl: string, overrides: Partial<LiveSettings> = {}): LiveSettings => ({
  model: "test-model",
  baseUrl,
  apiKey: Option.some(Redacted.make(TEST_KEY)),
  timeouts: { firstByteMs: 10_000, stallMs: 10_000 },
  ...overrides
})

/** A live Provider of the given wire format, over the fetch client. */
export const liveProvider = (wire: Wire, live: LiveSettings): Effect.Effect<Provider["Type"]> => {
  const make = wire === "openai-chat"
    ? ProviderOpenAiChat.make(live)
    : wire === "anthropic"
    ? ProviderAnthropic.make(live)
    : ProviderOpenAiResponses.make(live)
  return make.pipe(Effect.provide(FetchHttpClient.layer))
}

/**
 * The stream contract every Provider keeps, as a list of violations (empty when kept): per call, Start
 * first, deltas, at most one End whose arguments are the deltas joined; Usage at most once, right before
 * Finish; Finish at most once and last; a stream that completed has a Finish and ended every call.
 */
export const violations = (outcome: Outcome): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const started = new Set<string>()
  const ended = new Set<string>()
  const args = new Map<string, string>()
  outcome.events.forEach((e, i) => {
    const last = i === outcome.events.length - 1
    switch (e._tag) {
      case "ToolCallStart":
        if (started.has(e.id)) problems.push(`${i}: second Start for ${e.id}`)
        started.add(e.id)
        args.set(e.id, "")
        break
      case "ToolCallDelta":
        if (!started.has(e.id) || ended.has(e.id)) problems.push(`${i}: Delta outside ${e.id}'s Start..End`)
        args.set(e.id, (args.get(e.id) ?? "") + e.argumentsDelta)
        break
      case "ToolCallEnd":
        if (!started.has(e.id) || ended.has(e.id)) problems.push(`${i}: End outside ${e.id}'s Start..`)
        if (args.get(e.id) !== e.arguments) problems.push(`${i}: deltas of ${e.id} do not add up to its arguments`)
        ended.add(e.id)
        break
      case "Usage":
        if (outcome.events[i + 1]?._tag !== "Finish") problems.push(`${i}: Usage not right before Finish`)
        break
      case "Finish":
        if (!last) problems.push(`${i}: Finish is not last`)
        break
    }
  })
  if (outcome.error === undefined) {
    if (outcome.events.at(-1)?._tag !== "Finish") problems.push("completed without a Finish")
    for (const id of started) if (!ended.has(id)) problems.push(`call ${id} never ended`)
  }
  return problems
}

/** Serves one raw fixture file to the live layer of `wire` and runs one request through it. */
export const serveFixture = (
  wire: Wire,
  fixture: string
): Effect.Effect<Outcome & { readonly requests: ReadonlyArray<MockModelServer.RecordedRequest> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* MockModelServer.make({ replies: [MockModelServer.Reply.fixture(fixture)] })
    const provider = yield* liveProvider(wire, settings(server.baseUrl(wire)))
    const outcome = yield* run(provider.stream(request()))
    const broken = violations(outcome)
    if (broken.length > 0) return yield* Effect.dieMessage(`${fixture} broke the stream contract: ${broken.join("; ")}`)
    return { ...outcome, requests: yield* server.requests }
  })

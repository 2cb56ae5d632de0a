import { Cause, Clock, Effect, Exit, Option, Stream } from "effect"
import type { TaskEvent } from "../../domain/Events.js"
import type { ProviderRequest } from "../../domain/ProviderEvent.js"
import { type Assembly, emptyAssembly, end, type Ended, stepAll } from "../../domain/RunAssembler.js"
import { ATTR, SPAN, spanOptions, Telemetry } from "../../domain/Telemetry.js"
import type { Provider } from "../../services/Provider.js"
import { recordRequest, recordUsage, type RequestTags } from "./Metrics.js"
import type { WriteError } from "./RunLog.js"

/**
 * What a finished request tells its `chat` span: the model that answered (the one asked for when the
 * provider did not say), usage and finish reason, and with contents on, what the model said.
 */
const annotateEnded = (ended: Ended, model: string, content: boolean) =>
  Effect.annotateCurrentSpan({
    [ATTR.responseModel]: ended.assembly.model ?? model,
    [ATTR.finishReasons]: ended.assembly.finish !== undefined ? [ended.assembly.finish] : [],
    ...(ended.assembly.usage !== undefined
      ? { [ATTR.inputTokens]: ended.assembly.usage.input_tokens, [ATTR.outputTokens]: ended.assembly.usage.output_tokens }
      : {}),
    ...(content ? { [ATTR.outputMessages]: JSON.stringify(ended.assembly.messages) } : {})
  })

const errorType = <E>(exit: Exit.Exit<unknown, E>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const failure = Cause.failureOption(exit.cause)
  return Option.isSome(failure) && typeof failure.value === "object" && failure.value !== null && "_tag" in failure.value
    ? String(failure.value._tag)
    : "_OTHER"
}

/**
 * `self` as one model request: the `chat MODEL` span (the GenAI conventions) and its duration
 * measured. Every model request goes through here: the run's and compaction's (streamRequest), the
 * title's.
 */
export const modelCall = (provider: Provider["Type"], request: ProviderRequest) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const { content } = yield* Telemetry
    const model = request.model ?? provider.info?.model ?? "unknown"
    const tags: RequestTags = { provider: provider.info?.name ?? "unknown", model }
    const started = yield* Clock.currentTimeMillis
    return yield* self.pipe(
      Effect.withSpan(SPAN.chat(model), spanOptions({
        [ATTR.operation]: "chat",
        [ATTR.provider]: tags.provider,
        [ATTR.requestModel]: model,
        ...(content ? { [ATTR.systemInstructions]: request.system, [ATTR.inputMessages]: JSON.stringify(request.history) } : {})
      }, "client")),
      Effect.onExit((exit) =>
        Exit.isInterrupted(exit) ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => recordRequest(tags, (now - started) / 1000, errorType(exit))))
    )
  })

/**
 * One model request, as a fold of the provider's stream through the pure assembler: `emit` gets the
 * assembly and the items of each provider chunk (the events one network read produced) once, so a
 * run commits per read, never per event. Ends with the closed assembly, whose events the caller
 * emits (the run holds the usage back for its request_end). Shared by the run and compaction. Its
 * span is the request's own `chat MODEL` (modelCall).
 */
export const streamRequest = Effect.fnUntraced(function*(
  provider: Provider["Type"],
  request: ProviderRequest,
  emit: (assembly: Assembly, events: ReadonlyArray<TaskEvent>) => Effect.Effect<void, WriteError>
) {
  const { content } = yield* Telemetry
  const model = request.model ?? provider.info?.model ?? "unknown"
  return yield* Effect.gen(function*() {
    const assembly = yield* provider.stream(request).pipe(
      Stream.chunks,
      Stream.runFoldEffect(emptyAssembly, (assembly, events) => {
        const [next, out] = stepAll(assembly, events)
        return Effect.as(emit(next, out), next)
      })
    )
    const ended = end(assembly)
    yield* annotateEnded(ended, model, content)
    if (ended.assembly.usage !== undefined) {
      yield* recordUsage({ provider: provider.info?.name ?? "unknown", model }, ended.assembly.usage)
    }
    return ended
  }).pipe(modelCall(provider, request))
})

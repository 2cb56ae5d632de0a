import { Effect, Stream } from "effect"
import type { TaskEvent } from "../../domain/Events.js"
import type { ProviderRequest } from "../../domain/ProviderEvent.js"
import { type Assembly, emptyAssembly, end, stepAll } from "../../domain/RunAssembler.js"
import type { Provider } from "../../services/Provider.js"
import type { WriteError } from "./RunLog.js"

/**
 * One model request, as a fold of the provider's stream through the pure assembler: `emit` gets the
 * assembly and the items of each provider chunk (the events one network read produced) once, so a
 * run commits per read, never per event. Ends with the closed assembly, whose events the caller
 * emits (the run holds the usage back for its request_end). Shared by the run and compaction.
 */
export const streamRequest = Effect.fn("Run.streamRequest")(function*(
  provider: Provider["Type"],
  request: ProviderRequest,
  emit: (assembly: Assembly, events: ReadonlyArray<TaskEvent>) => Effect.Effect<void, WriteError>
) {
  const assembly = yield* provider.stream(request).pipe(
    Stream.chunks,
    Stream.runFoldEffect(emptyAssembly, (assembly, events) => {
      const [next, out] = stepAll(assembly, events)
      return Effect.as(emit(next, out), next)
    })
  )
  return end(assembly)
})

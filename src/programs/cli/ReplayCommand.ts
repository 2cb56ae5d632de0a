import type { FileSystem } from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Path from "node:path"
import { ConfigError } from "../../domain/Errors.js"
import { TASK_TOOL } from "../../domain/Subagents.js"
import { load } from "../../services/provider/Cassette.js"

/** What a cassette's first request says about the task that produced it. */
const FirstRequest = Schema.Struct({
  system: Schema.String,
  model: Schema.optionalWith(Schema.String, { exact: true }),
  history: Schema.Array(Schema.Struct({ type: Schema.String, content: Schema.optionalWith(Schema.String, { exact: true }) })),
  tools: Schema.optionalWith(Schema.Array(Schema.Struct({ name: Schema.String })), { default: () => [] })
})

export interface RecordedTask {
  readonly cassette: string
  readonly prompt: ReadonlyArray<string>
  readonly system: string
  readonly model: string | undefined
  /** Whether the recorded session offered `Task` (recordings made before subagents did not). */
  readonly subagents: boolean
}

/**
 * Reads the task a cassette recorded: its prompts (the first request's opening user messages), the
 * system prompt and the model. Replaying needs exactly these, because requests are matched by what
 * the model saw.
 */
export const recordedTask: (file: string) => Effect.Effect<RecordedTask, ConfigError, FileSystem> = Effect.fn("Cli.recordedTask")(
  function*(file: string) {
    const cassette = Path.resolve(file)
    const entries = yield* load(cassette)
    const first = entries[0]
    if (first === undefined) return yield* new ConfigError({ source: cassette, message: `the cassette ${cassette} has no recorded calls` })
    const request = yield* Either.match(Schema.decodeUnknownEither(FirstRequest)(first.request), {
      onLeft: () => Effect.fail(new ConfigError({ source: cassette, field: "line 1", message: `the first call in ${cassette} has no readable request` })),
      onRight: Effect.succeed
    })
    const firstOther = request.history.findIndex((m) => m.type !== "user_message")
    const opening = firstOther === -1 ? request.history : request.history.slice(0, firstOther)
    const prompt = opening.flatMap((m) => (m.content !== undefined ? [m.content] : []))
    if (prompt.length === 0) {
      return yield* new ConfigError({ source: cassette, field: "line 1", message: `the first call in ${cassette} does not start with a user message, so it cannot be replayed from the start` })
    }
    return { cassette, prompt, system: request.system, model: request.model, subagents: request.tools.some((t) => t.name === TASK_TOOL) }
  }
)

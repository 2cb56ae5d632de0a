import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type McpServerConfig, resolveServer, variablesIn } from "../../domain/McpConfig.js"
import type { AppEnv } from "./Env.js"

/**
 * The MCP servers a command starts: the merged settings entries with every `${VAR}` read from the
 * environment (through Effect Config, only the variables the entries name). The expanded values
 * exist only here and in the processes and requests they are for: never in a conversation.
 */
export const mcpServerConfigs = (env: AppEnv): Effect.Effect<ReadonlyArray<McpServerConfig>> =>
  Effect.gen(function*() {
    const names = [...new Set(env.settings.mcpServers.flatMap((s) => variablesIn(s.entry)))]
    const values = new Map<string, string>()
    for (const name of names) {
      const value = yield* Config.option(Config.string(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
      if (Option.isSome(value)) values.set(name, value.value)
    }
    return env.settings.mcpServers.map((s) => resolveServer(s.key, s.entry, s.source, env.workspace, (name) => values.get(name)))
  })

import { Effect, Ref } from "effect"
import type { Conversation, ConversationSettings, ToolDefinition } from "../../domain/Conversation.js"
import type { Backend } from "../../services/Backend.js"
import type { ToolExecutor } from "../../services/ToolExecutor.js"

/**
 * Brings the conversation's tool list up to the executor's: an MCP server's listChanged, or one
 * that died, changes what the next model request may offer. Cheap when nothing changed (the
 * executor hands back the same array), so it runs before every run.
 */
export const toolSync = (backend: Backend["Type"], executor: ToolExecutor["Type"], conversation: Conversation) =>
  Effect.gen(function*() {
    const synced = yield* Ref.make<{ readonly offered?: ReadonlyArray<ToolDefinition>; readonly settings: ConversationSettings }>({
      settings: conversation.settings
    })
    return Effect.gen(function*() {
      const offered = yield* executor.definitions
      const last = yield* Ref.get(synced)
      if (offered === last.offered) return
      const settings = JSON.stringify(offered) === JSON.stringify(last.settings.tools)
        ? last.settings
        : (yield* backend.updateConversation(conversation.id, { settings: { ...last.settings, tools: offered } })).settings
      yield* Ref.set(synced, { offered, settings })
    })
  })

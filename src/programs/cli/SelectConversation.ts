import * as Effect from "effect/Effect"
import type { Conversation } from "../../domain/Conversation.js"
import { type BackendError, ConfigError } from "../../domain/Errors.js"
import { ConversationId } from "../../domain/Ids.js"
import { Backend } from "../../services/Backend.js"
import type { AppEnv } from "./Env.js"

const PAGE = 100
const MAX_PAGES = 50

/**
 * The most recently active conversation that ran in `workspace` (conversations record their
 * workspace); never a subagent's, which its parent's task runs.
 */
export const latestInWorkspace = (workspace: string): Effect.Effect<Conversation | undefined, BackendError, Backend> =>
  Effect.gen(function*() {
    const backend = yield* Backend
    let before: string | undefined
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = yield* backend.listConversations({ limit: PAGE, roots: true, ...(before !== undefined ? { before } : {}) })
      const found = result.items.find((c) => c.settings.workspace === workspace)
      if (found !== undefined) return found
      if (result.next === undefined) return undefined
      before = result.next
    }
    return undefined
  })

export const parseConversationId = (text: string): Effect.Effect<ConversationId, ConfigError> =>
  text.trim() === ""
    ? Effect.fail(new ConfigError({ source: "--conversation", field: "conversation", message: "--conversation needs a conversation id" }))
    : Effect.succeed(ConversationId.make(text.trim()))

/**
 * Which conversation a task command continues: `--conversation ID`, or with `--continue` the
 * workspace's latest; undefined starts a new one. `note` says what happened when it is not obvious.
 */
export const selectConversation = (env: AppEnv): Effect.Effect<
  { readonly id: ConversationId | undefined; readonly note?: string },
  BackendError | ConfigError,
  Backend
> =>
  Effect.gen(function*() {
    if (env.args.conversation !== undefined) {
      const id = yield* parseConversationId(env.args.conversation)
      yield* (yield* Backend).getConversation(id)
      return { id }
    }
    if (!env.args.continue) return { id: undefined }
    const latest = yield* latestInWorkspace(env.workspace)
    return latest === undefined
      ? { id: undefined, note: `no earlier conversation in ${env.workspace}: starting a new one` }
      : { id: latest.id, note: `continuing conversation ${latest.id}${latest.title !== undefined ? ` (${latest.title})` : ""}` }
  })

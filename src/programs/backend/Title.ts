import { Effect, Stream } from "effect"
import { ModelCallFailed } from "../../domain/Errors.js"
import type { ConversationId } from "../../domain/Ids.js"
import { Otid } from "../../domain/Ids.js"
import { oneShotRequest } from "../../domain/ModelRequest.js"
import { Provider } from "../../services/Provider.js"
import { Store } from "../../services/Store.js"
import { modelCall } from "./StreamRequest.js"
import { metered } from "./Metering.js"

const TITLE_PROMPT = "Write a title of at most six words for the conversation that begins with the messages below. Reply with the title only, no quotes.\n\n"

/**
 * A one-shot model call, outside the conversation: no tools, no system prompt, nothing added to the
 * history or the trace. Only the title it produces is stored.
 */
export class Titles extends Effect.Service<Titles>()("baton/Titles", {
  effect: Effect.gen(function*() {
    const store = yield* Store
    const provider = yield* Provider

    const generate = Effect.fn("Titles.generate")(function*(id: ConversationId) {
      const conversation = yield* store.getConversation(id)
      // The opening of the conversation (after position 0, oldest first), not its newest items.
      const opening = (yield* store.listItems(id, { after: 0, limit: 50 }))
        .flatMap((s) => (s.item.type === "user_message" && s.inTrace ? [s.item.content] : []))
        .slice(0, 3)
        .join("\n\n")
        .slice(0, 4000)
      const prompt = { type: "user_message", content: TITLE_PROMPT + (opening.length > 0 ? opening : "(no messages yet)"), otid: Otid.make("title") } as const
      const request = oneShotRequest(conversation.settings, prompt, 64)
      const meter = metered(provider, store, { conversationId: id, purpose: "title" })
      const text = yield* meter.stream(request).pipe(
        Stream.runFold("", (acc, event) => (event._tag === "TextDelta" ? acc + event.text : acc)),
        modelCall(provider, request),
        Effect.mapError((e) => new ModelCallFailed({ tag: e._tag, message: e.message }))
      )
      const title = text.trim().replace(/^["'“”]+|["'“”.]+$/g, "").split("\n")[0]!.slice(0, 100)
      if (title.length === 0) return yield* new ModelCallFailed({ tag: "EmptyResponse", message: "the model returned no title" })
      yield* store.updateConversation(id, { title })
      return title
    })

    return { generate } as const
  })
}) {}

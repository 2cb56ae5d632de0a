import { assert, describe, it } from "@effect/vitest"
import { Deferred, type Duration, Effect, Fiber, Layer, Stream, TestClock } from "effect"
import type { ConversationId } from "../../src/domain/Ids.js"
import { makeLocalConversations, programs } from "../../src/programs/backend/BackendLocal.js"
import { Command } from "../../src/programs/backend/ConversationActor.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { awaitSleeps, collect, eventually, input, user } from "../support/testing.js"

/** This process's conversations (the registry of actors) over the test's Store and model. */
const local = (passivation: Duration.DurationInput = "10 seconds") => makeLocalConversations({ passivation }).pipe(Effect.provide(programs))

const answered = (conversations: Effect.Effect.Success<ReturnType<typeof local>>["conversations"], id: ConversationId, text: string) =>
  collect(Stream.unwrap(Effect.flatMap(conversations.ask(id, Command.Send({ input: input(user(text)) })), (runId) => conversations.follow(runId, 0))))

const stopOf = (chunks: ReadonlyArray<{ readonly type: string }>) => {
  const last = chunks.at(-1)
  return last !== undefined && last.type === "stop_reason" && "reason" in last ? last.reason : undefined
}

/** The Memory store, with `getConversation` of one conversation held until `open` completes (a slow admission). */
const blockingStore = (blocked: Deferred.Deferred<ConversationId>, entered: Deferred.Deferred<void>, open: Deferred.Deferred<void>) =>
  Layer.effect(
    Store,
    Effect.gen(function*() {
      const store = yield* Store
      return Store.of({
        ...store,
        getConversation: (id) =>
          Effect.gen(function*() {
            const target = yield* Deferred.poll(blocked)
            if (target._tag === "Some" && (yield* target.value) === id && !(yield* Deferred.isDone(open))) {
              yield* Deferred.succeed(entered, undefined)
              yield* Deferred.await(open)
            }
            return yield* store.getConversation(id)
          })
      })
    })
  ).pipe(Layer.provide(layerMemory))

/** The Memory store, counting whole-segment reads (a conversation's context loaded into memory). */
const segmentLoads = { count: 0 }
const countingSegments = Layer.effect(
  Store,
  Effect.map(Store, (store) =>
    Store.of({
      ...store,
      segmentItems: (id, segment) => Effect.suspend(() => (segmentLoads.count++, store.segmentItems(id, segment))),
      currentSegmentItems: (id) => Effect.suspend(() => (segmentLoads.count++, store.currentSegmentItems(id)))
    }))
).pipe(Layer.provide(layerMemory))

describe("conversation actors in one process", () => {
  it.scoped("an idle actor is passivated (no actor left) and its next command re-activates it from the Store", () =>
    Effect.gen(function*() {
      const store = yield* Store
      const { conversations, registry } = yield* local("10 seconds")
      const conversation = yield* store.createConversation({ system_prompt: "" })
      assert.strictEqual(yield* registry.live, 0)

      assert.strictEqual(stopOf(yield* answered(conversations, conversation.id, "one")), "end_turn")
      assert.strictEqual(yield* registry.live, 1, "the actor stays while it may get another command")
      // Its job has let go of it: the idle timer is the only thing left running.
      yield* awaitSleeps(1)
      yield* TestClock.adjust("9 seconds")
      assert.strictEqual(yield* registry.live, 1)
      yield* TestClock.adjust("2 seconds")
      yield* eventually(Effect.map(registry.live, (n) => n === 0), "the idle actor is passivated")

      const second = yield* answered(conversations, conversation.id, "two")
      assert.strictEqual(stopOf(second), "end_turn")
      assert.isTrue(second.some((c) => c.type === "assistant_message" && c.content === "second answer"))
      const history = (yield* store.listItems(conversation.id)).map((s) => s.item)
      assert.deepStrictEqual(
        history.flatMap((i) => (i.type === "user_message" || i.type === "assistant_message" ? [i.content] : [])),
        ["one", "first answer", "two", "second answer"]
      )
      assert.strictEqual(yield* registry.live, 1)
    }).pipe(Effect.provide(Layer.merge(layerMemory, layerScripted([Turn.text("first answer"), Turn.text("second answer")])))))

  it.scoped("a passivated conversation leaves its context behind: the send after passivation reads its segment from the Store again", () =>
    Effect.gen(function*() {
      const store = yield* Store
      const { conversations, registry } = yield* local("10 seconds")
      const conversation = yield* store.createConversation({ system_prompt: "" })
      assert.strictEqual(stopOf(yield* answered(conversations, conversation.id, "one")), "end_turn")
      const loadsAfterFirst = segmentLoads.count
      assert.isAbove(loadsAfterFirst, 0)
      assert.strictEqual(stopOf(yield* answered(conversations, conversation.id, "two")), "end_turn")
      assert.strictEqual(segmentLoads.count, loadsAfterFirst, "a live actor's context is kept in memory between sends")
      yield* awaitSleeps(1)
      yield* TestClock.adjust("11 seconds")
      yield* eventually(Effect.map(registry.live, (n) => n === 0), "the idle actor is passivated")
      assert.strictEqual(stopOf(yield* answered(conversations, conversation.id, "three")), "end_turn")
      assert.isAbove(segmentLoads.count, loadsAfterFirst, "the context left memory with the actor")
    }).pipe(Effect.provide(Layer.merge(countingSegments, layerScripted([Turn.text("a"), Turn.text("b"), Turn.text("c")])))))

  it.scoped("an actor with a running job is never passivated, however long the job takes", () =>
    Effect.gen(function*() {
      const store = yield* Store
      const { conversations, registry } = yield* local("10 seconds")
      const conversation = yield* store.createConversation({ system_prompt: "" })
      const runId = yield* conversations.ask(conversation.id, Command.Send({ input: input(user("go")) }))
      yield* TestClock.adjust("1 minute")
      assert.strictEqual(yield* registry.live, 1)
      assert.isTrue(yield* conversations.isBusy(conversation.id))
      // A cancel reaches the same actor, which still has the job: the run stops as cancelled.
      yield* conversations.ask(conversation.id, Command.Cancel({ carryOver: undefined }))
      const chunks = yield* collect(yield* conversations.follow(runId, 0))
      assert.strictEqual(stopOf(chunks), "cancelled")
    }).pipe(Effect.provide(Layer.merge(layerMemory, layerScripted([Turn.stall({ text: "partial" })])))))

  it.scoped("a cancel stops a compaction and ends its run as cancelled: the conversation is free at once", () =>
    Effect.gen(function*() {
      const store = yield* Store
      const { conversations } = yield* local()
      const conversation = yield* store.createConversation({ system_prompt: "" })
      assert.strictEqual(stopOf(yield* answered(conversations, conversation.id, "something to summarize")), "end_turn")
      const runId = yield* conversations.ask(conversation.id, Command.Compact({ reason: "manual" }))
      assert.isTrue(yield* conversations.isBusy(conversation.id))
      yield* conversations.ask(conversation.id, Command.Cancel({ carryOver: undefined }))
      assert.strictEqual(stopOf(yield* collect(yield* conversations.follow(runId, 0))), "cancelled")
      assert.strictEqual((yield* store.getRun(runId)).status, "cancelled")
      assert.isFalse(yield* conversations.isBusy(conversation.id))
    }).pipe(Effect.provide(Layer.merge(layerMemory, layerScripted([Turn.text("an answer"), Turn.stall({ text: "[summary]half" })])))))

  it.scoped("a slow admission on one conversation (its store calls held) delays no other conversation", () =>
    Effect.gen(function*() {
      const blocked = yield* Deferred.make<ConversationId>()
      const entered = yield* Deferred.make<void>()
      const open = yield* Deferred.make<void>()
      yield* Effect.gen(function*() {
        const store = yield* Store
        const { conversations } = yield* local()
        const a = yield* store.createConversation({ system_prompt: "" })
        const b = yield* store.createConversation({ system_prompt: "" })
        yield* Deferred.succeed(blocked, a.id)
        const sendA = yield* Effect.fork(answered(conversations, a.id, "to A"))
        yield* Deferred.await(entered)
        // A's admission is held inside its turn; B's whole run goes through meanwhile.
        const chunksB = yield* answered(conversations, b.id, "to B")
        assert.strictEqual(stopOf(chunksB), "end_turn")
        assert.isNull(sendA.unsafePoll(), "A is still being admitted")
        yield* Deferred.succeed(open, undefined)
        assert.strictEqual(stopOf(yield* Fiber.join(sendA)), "end_turn")
      }).pipe(Effect.provide(Layer.merge(blockingStore(blocked, entered, open), layerScripted([Turn.text("answer"), Turn.text("answer")]))))
    }))
})

import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, FastCheck, Layer, Option, Ref } from "effect"
import type { BackendError } from "../../src/domain/Errors.js"
import { type ConversationId, Otid, ToolCallId } from "../../src/domain/Ids.js"
import { makeLocalConversations, programs } from "../../src/programs/backend/BackendLocal.js"
import { Command, steeringOtid } from "../../src/programs/backend/ConversationActor.js"
import type { ProviderRequest } from "../../src/domain/ProviderEvent.js"
import { layerScripted, Turn } from "../../src/services/provider/Scripted.js"
import { Store } from "../../src/services/Store.js"
import { layerMemory } from "../../src/services/store/Memory.js"
import { eventually, toolResult, user } from "../support/testing.js"

/**
 * Random interleavings of a conversation's commands, several conversations at once, through the
 * actors of one process: per conversation, what the Store recorded is the inbox's order, no two
 * jobs were ever active together, and no answer (a message, a result, a steer) is lost or doubled.
 */

type Op = "send" | "sendStall" | "sendCall" | "resend" | "cancel" | "result" | "steer" | "compact"
const ops: ReadonlyArray<Op> = ["send", "sendStall", "sendCall", "resend", "cancel", "result", "steer", "compact"]
const CONVERSATIONS = 3

/** The model: a tool call for "call:<id>", a stream that never ends for "stall", a short answer otherwise. */
const respond = (request: ProviderRequest): Turn => {
  const last = request.history.findLast((m) => m.type === "user_message")
  const text = last !== undefined && last.type === "user_message" ? last.content : ""
  if (text.startsWith("call:")) return Turn.toolCalls([{ id: text.slice(5), name: "Read" }])
  if (text === "stall") return Turn.stall({ text: "partial" })
  return Turn.text("[summary]s[/summary] answer")
}

/** A store call that first lets other fibers run, as a database's round trip would. */
const roundTrip = <A, E>(call: Effect.Effect<A, E>) => Effect.zipRight(Effect.yieldNow(), call)

/**
 * The Memory store with a round trip before each call an admission makes, noting every run created
 * while its conversation already had one active.
 */
const watchedStore = (overlaps: Ref.Ref<ReadonlyArray<string>>) =>
  Layer.effect(
    Store,
    Effect.map(Store, (store) =>
      Store.of({
        ...store,
        getConversation: (id) => roundTrip(store.getConversation(id)),
        pendingApprovals: (id) => roundTrip(store.pendingApprovals(id)),
        toolReturns: (id, calls) => roundTrip(store.toolReturns(id, calls)),
        runByOtid: (id, otid) => roundTrip(store.runByOtid(id, otid)),
        activeRun: (id) => roundTrip(store.activeRun(id)),
        commit: (write) => roundTrip(store.commit(write)),
        queueSteering: (id, message) => roundTrip(store.queueSteering(id, message)),
        // A send asks createRun itself whether the conversation is free: a run it creates while another is active is the overlap.
        // The active run is read in the same step as the creation (no yield between them).
        createRun: (id, otid, kind, options) =>
          roundTrip(Effect.flatMap(store.activeRun(id), (active) =>
            Effect.tap(store.createRun(id, otid, kind, options), ({ created, run }) =>
              created && Option.isSome(active)
                ? Ref.update(overlaps, (all) => [...all, `${id}: ${kind} ${run.id} created while ${active.value.id} was active`])
                : Effect.void)))
      }))
  ).pipe(Layer.provide(layerMemory))

interface Issued {
  readonly conversation: number
  /** What this command leaves in the history in its own turn, if it succeeds. */
  readonly mark?: string
  readonly steer?: string
  readonly reply: Effect.Effect<unknown, BackendError>
}

const runPlan = (plan: ReadonlyArray<readonly [number, Op]>) =>
  Effect.gen(function*() {
    const overlaps = yield* Ref.make<ReadonlyArray<string>>([])
    yield* Effect.gen(function*() {
      const store = yield* Store
      const { conversations, registry } = yield* makeLocalConversations().pipe(Effect.provide(programs))
      const ids: ReadonlyArray<ConversationId> = yield* Effect.forEach(
        Array.from({ length: CONVERSATIONS }),
        () => Effect.map(store.createConversation({ system_prompt: "", tools: [{ name: "Read", description: "read", parameters: { type: "object" } }] }), (c) => c.id)
      )
      const lastSend = new Map<number, Otid>()
      const lastCall = new Map<number, string>()
      const issued: Array<Issued> = []
      // Every command is queued before any reply is awaited: the inbox's order is the plan's.
      yield* Effect.scoped(Effect.gen(function*() {
        for (const [k, [c, op]] of plan.entries()) {
          const id = ids[c]!
          const otid = Otid.make(`o-${k}`)
          const command = (() => {
            switch (op) {
              case "send":
              case "sendStall":
              case "sendCall": {
                const text = op === "send" ? `hello ${k}` : op === "sendStall" ? "stall" : `call:call-${c}-${k}`
                if (op === "sendCall") lastCall.set(c, `call-${c}-${k}`)
                lastSend.set(c, otid)
                return { command: Command.Send({ input: { messages: [user(text, otid)] } }), mark: `send ${otid}` }
              }
              case "resend": {
                const again = lastSend.get(c) ?? otid
                return { command: Command.Send({ input: { messages: [user(`hello ${k}`, again)] } }), mark: `send ${again}` }
              }
              case "cancel":
                return { command: Command.Cancel({ carryOver: { abort: true } }), mark: "abort" }
              case "result": {
                const call = lastCall.get(c) ?? `call-${c}-none`
                return { command: Command.SubmitResult({ result: { ...toolResult(call), otid }, decision: undefined }), mark: `result ${otid}` }
              }
              case "steer":
                return { command: Command.Steer({ text: `steer ${k}`, otid: steeringOtid() }), steer: `steer ${k}` }
              case "compact":
                return { command: Command.Compact({ reason: "manual" }) }
            }
          })()
          const reply = yield* registry.enqueue(id, command.command)
          issued.push({ conversation: c, reply, ...(command.mark !== undefined ? { mark: command.mark } : {}), ...(command.steer !== undefined ? { steer: command.steer } : {}) })
        }
        const replies = yield* Effect.forEach(issued, (i) => Effect.either(i.reply))
        // Then each conversation is stopped (its stalled run, its pending calls closed) and left idle.
        yield* Effect.forEach(ids, (id) => conversations.ask(id, Command.Cancel({ carryOver: undefined })), { discard: true })
        yield* eventually(Effect.map(Effect.forEach(ids, conversations.isBusy), (busy) => busy.every((b) => !b)), "every job ended")

        for (const [c, id] of ids.entries()) {
          const mine = issued.flatMap((i, k) => (i.conversation === c ? [{ ...i, ok: Either.isRight(replies[k]!) }] : []))
          const history = yield* store.listItems(id)
          // The inbox's order is the store's: the marks the succeeding commands left, in history order
          // (a send or a result by its otid, once, however often it was sent; every cancel's abort).
          const expected = mine.flatMap((i) => (i.ok && i.mark !== undefined ? [i.mark] : []))
            .filter((m, n, all) => m === "abort" || all.indexOf(m) === n)
          const known = new Set(expected)
          const seen = new Set<string>()
          const recorded = history.flatMap(({ item }) => {
            const mark = item.type === "abort" ? "abort" : item.type === "user_message" ? `send ${item.otid}` : item.type === "tool_return" ? `result ${item.otid}` : undefined
            if (mark === undefined || !known.has(mark) || (mark !== "abort" && seen.has(mark))) return []
            seen.add(mark)
            return [mark]
          })
          assert.deepStrictEqual(recorded, expected, `conversation ${c}: the store's order is the inbox's`)
          // No message doubled; every pending call answered exactly once in the context.
          for (const mark of expected.filter((m) => m.startsWith("send "))) {
            const otid = mark.slice(5)
            assert.strictEqual(history.filter(({ inContext, item }) => inContext && item.type === "user_message" && item.otid === otid).length, 1, `conversation ${c}: ${otid} once`)
          }
          const calls = history.flatMap(({ inContext, item }) => (inContext && item.type === "tool_call" ? [item.tool_call_id] : []))
          for (const call of calls) {
            const answers = history.filter(({ inContext, item }) => inContext && item.type === "tool_return" && item.tool_call_id === ToolCallId.make(call))
            assert.strictEqual(answers.length, 1, `conversation ${c}: call ${call} answered once`)
          }
          // A steer accepted is never lost nor doubled: still held, or taken into the history once.
          const held = (yield* store.heldSteering(id)).map((m) => m.content)
          for (const steer of mine.flatMap((i) => (i.ok && i.steer !== undefined ? [i.steer] : []))) {
            const taken = history.filter(({ inContext, item }) => inContext && item.type === "user_message" && item.content.includes(steer)).length
            assert.strictEqual(taken + held.filter((h) => h.includes(steer)).length, 1, `conversation ${c}: ${steer} kept once`)
          }
        }
      }))
      assert.isAtMost(yield* registry.live, CONVERSATIONS)
    }).pipe(Effect.provide(Layer.merge(watchedStore(overlaps), layerScripted(Array.from({ length: 400 }, () => respond)))), Effect.scoped)
    assert.deepStrictEqual(yield* Ref.get(overlaps), [], "at most one active job per conversation")
  })

describe("conversation actors: random interleavings", () => {
  it.live("the store records each conversation's commands in its inbox's order, one job at a time, nothing lost or doubled", () =>
    Effect.promise(() =>
      FastCheck.assert(
        FastCheck.asyncProperty(
          FastCheck.array(FastCheck.tuple(FastCheck.integer({ min: 0, max: CONVERSATIONS - 1 }), FastCheck.constantFrom(...ops)), { minLength: 1, maxLength: 14 }),
          (plan) => Effect.runPromise(runPlan(plan))
        ),
        { numRuns: 25 }
      )
    ), 120_000)
})

import { Effect, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Chunk, TaskEvent } from "../../src/domain/Events.js"
import type { StoredItem } from "../../src/domain/History.js"
import type { ConversationId, RunId, ToolCallId } from "../../src/domain/Ids.js"
import { Store } from "../../src/services/Store.js"
import type { RecordedRequest } from "../support/MockModelServer.js"
import { kindOf, messagesOf } from "./SoakModel.js"

/**
 * What must hold after every kill and continue, checked from the mock's requests, the SQLite file,
 * the workspace and /proc. Each check returns the violations it found, as sentences.
 */

/** Every assistant tool call answered exactly once, in call order, before anything else is said. */
export const pairingInRequests = (requests: ReadonlyArray<RecordedRequest>): ReadonlyArray<string> => {
  const violations: Array<string> = []
  for (const request of requests) {
    let open: Array<string> = []
    let order: Array<string> = []
    for (const m of messagesOf(request)) {
      if (m.role === "tool") {
        const id = m.tool_call_id ?? ""
        if (!open.includes(id)) violations.push(`request ${request.index}: a result for ${id}, which is not an open call (duplicate or orphan)`)
        else if (order[0] !== id) violations.push(`request ${request.index}: result ${id} out of call order (${order.join(",")})`)
        open = open.filter((x) => x !== id)
        order = order.filter((x) => x !== id)
        continue
      }
      if (open.length > 0) violations.push(`request ${request.index}: calls ${open.join(",")} unanswered before a ${m.role} message`)
      open = (m.tool_calls ?? []).map((c) => c.id)
      order = [...open]
    }
    if (open.length > 0) violations.push(`request ${request.index}: calls ${open.join(",")} unanswered at the end`)
  }
  return violations
}

/** The same over the store's model context (the current segment). */
export const pairingInContext = (context: ReadonlyArray<StoredItem>): ReadonlyArray<string> => {
  const violations: Array<string> = []
  const calls = new Map<string, number>()
  const returns = new Map<string, number>()
  for (const { item } of context) {
    if (item.type === "tool_call") calls.set(item.tool_call_id, (calls.get(item.tool_call_id) ?? 0) + 1)
    if (item.type === "tool_return") returns.set(item.tool_call_id, (returns.get(item.tool_call_id) ?? 0) + 1)
  }
  for (const [id, n] of calls) if (returns.get(id) !== n) violations.push(`context: call ${id} has ${returns.get(id) ?? 0} result(s)`)
  for (const [id] of returns) if (!calls.has(id)) violations.push(`context: result ${id} without its call`)
  return violations
}

export interface Executions {
  /** Per Bash call: the pid of each execution that appended, in order. */
  readonly bash: ReadonlyMap<string, ReadonlyArray<string>>
  /** Per Write/Edit target: how many times it was renamed into place (one per completed execution). */
  readonly files: ReadonlyMap<string, number>
}

/**
 * Watches a workspace for completed file writes: Write and Edit replace a file by renaming a temp
 * file onto it, one rename per execution (inotify, through fs.watch). `settle` writes a marker and
 * waits for its event, so every earlier event has been delivered when it returns.
 */
export const watchWrites = (workspace: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const renames = new Map<string, number>()
      const listeners = new Set<(name: string) => void>()
      const watcher = Fs.watch(workspace, (event, name) => {
        if (name === null) return
        if (event === "rename" && /^[we]-.*\.txt$/.test(name) && Fs.existsSync(Path.join(workspace, name))) {
          renames.set(name, (renames.get(name) ?? 0) + 1)
        }
        for (const listener of listeners) listener(name)
      })
      let marks = 0
      const settle = Effect.async<void>((resume) => {
        const mark = `.settle-${++marks}`
        const listener = (name: string) => {
          if (name !== mark) return
          listeners.delete(listener)
          resume(Effect.void)
        }
        listeners.add(listener)
        Fs.writeFileSync(Path.join(workspace, mark), "")
      })
      return { watcher, renames, settle }
    }),
    ({ watcher }) => Effect.sync(() => watcher.close())
  )

export const bashExecutions = (workspace: string): ReadonlyMap<string, ReadonlyArray<string>> => {
  const file = Path.join(workspace, "bash.log")
  const runs = new Map<string, Array<string>>()
  if (!Fs.existsSync(file)) return runs
  for (const line of Fs.readFileSync(file, "utf8").split("\n")) {
    const [id, pid] = line.trim().split(" ")
    if (id === undefined || id === "" || pid === undefined) continue
    runs.set(id, [...(runs.get(id) ?? []), pid])
  }
  return runs
}

/**
 * No committed tool ran again: a Bash call's committed result names the pid that produced it, and no
 * execution of that call comes after it; a file is put in place by at most one execution (a second
 * Write or Edit of the same call in another process is refused, as the file was not read there).
 */
export const executionViolations = (executions: Executions, committed: ReadonlyMap<string, string>): ReadonlyArray<string> => {
  const violations: Array<string> = []
  for (const [id, pids] of executions.bash) {
    const result = committed.get(id)
    const pid = result === undefined ? undefined : /^pid (\d+)/.exec(result)?.[1]
    if (pid !== undefined && pids.at(-1) !== pid) violations.push(`Bash ${id} ran again after its result (pid ${pid}) was committed: ${pids.join(",")}`)
    if (pid !== undefined && !pids.includes(pid)) violations.push(`Bash ${id}: committed pid ${pid} never appended`)
  }
  for (const [file, n] of executions.files) if (n > 1) violations.push(`${file} was written ${n} times`)
  return violations
}

/** Live processes carrying a tool marker of one of these Baton processes. */
export const leftoverProcesses = (owners: ReadonlyArray<number>): ReadonlyArray<number> => {
  const found: Array<number> = []
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const state = Fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]?.[0]
      if (state === "Z" || state === "X") continue
      const env = Fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0")
      if (owners.some((pid) => env.some((e) => e.startsWith(`BATON_TOOL_OWNER=${pid}:`)))) found.push(Number(entry))
    } catch {
      // gone, or not ours to read
    }
  }
  return found
}

/** What the store holds after the iteration, for the checks. */
export const storeFacts = (conversationId: ConversationId, printed: ReadonlyArray<TaskEvent>) =>
  Effect.gen(function*() {
    const store = yield* Store
    const violations: Array<string> = []
    const context = yield* store.modelContext(conversationId)
    violations.push(...pairingInContext(context))
    if ((yield* store.runningRuns).length > 0) violations.push("a run is still running (the conversation is busy)")
    const pending = yield* store.pendingApprovals(conversationId)
    if (pending.length > 0) violations.push(`calls still pending: ${pending.map((c) => c.tool_call_id).join(",")}`)
    // Everything a client was shown with a seq was committed before it was sent.
    const byRun = new Map<RunId, Map<number, string>>()
    for (const event of printed) {
      if (!("run_id" in event) || !("seq" in event) || event.run_id === undefined || event.seq === undefined) continue
      const runId = event.run_id
      if (!byRun.has(runId)) {
        const stored = yield* Stream.runCollect(store.readChunks(runId, 0)).pipe(Effect.orElseSucceed(() => []))
        byRun.set(runId, new Map(Array.from(stored, (c: Chunk) => [c.seq, c.type])))
      }
      if (byRun.get(runId)!.get(event.seq) !== event.type) violations.push(`chunk ${runId}:${event.seq} (${event.type}) was shown but is not stored`)
    }
    const items = yield* store.listItems(conversationId, { limit: 1000 })
    const ids = [...new Set(items.flatMap((s) => (s.item.type === "tool_call" ? [s.item.tool_call_id] : [])))] as Array<ToolCallId>
    const returns = yield* store.toolReturns(conversationId, ids)
    const committed = new Map<string, string>()
    for (const s of returns) {
      if (s.item.type !== "tool_return") continue
      if (kindOf(s.item.tool_call_id) !== undefined && (s.inContext || s.inTrace)) committed.set(s.item.tool_call_id, s.item.content)
    }
    const prompts = items.filter((s) => s.item.type === "user_message" && s.inContext).map((s) => (s.item.type === "user_message" ? s.item.content : ""))
    return { violations, committed, prompts, answered: items.some((s) => s.item.type === "assistant_message" && s.item.content === "all done") }
  })

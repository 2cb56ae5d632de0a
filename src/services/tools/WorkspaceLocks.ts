import { Effect } from "effect"
import type { ResourceKey } from "../../domain/ResourceKey.js"
import { type FairRwLock, type LockTicket, unsafeMakeFairRwLock } from "./FairLock.js"

export interface WorkspaceLocksState {
  readonly readers: number
  readonly writer: boolean
  readonly queued: number
  /** Paths with a lock currently held or awaited. */
  readonly paths: ReadonlyArray<string>
}

/**
 * The locks of one workspace: a fair readers/writer gate that global
 * tools take exclusively and every other tool shares, plus one fair exclusive lock per file path.
 */
export interface WorkspaceLocks {
  /**
   * Queues every lock the key needs in one synchronous step. Because all requests enter their
   * queues in one global order and every queue is FIFO, a call only ever waits for earlier calls,
   * so a call holding a path lock while it waits for the gate cannot deadlock.
   */
  readonly unsafeEnqueue: (key: ResourceKey) => LockTicket
  readonly state: Effect.Effect<WorkspaceLocksState>
}

interface PathEntry {
  readonly lock: FairRwLock
  users: number
}

export const unsafeMakeWorkspaceLocks = (): WorkspaceLocks => {
  const gate = unsafeMakeFairRwLock()
  const paths = new Map<string, PathEntry>()

  const enqueuePath = (path: string): LockTicket => {
    let entry = paths.get(path)
    if (entry === undefined) {
      entry = { lock: unsafeMakeFairRwLock(), users: 0 }
      paths.set(path, entry)
    }
    const owner = entry
    owner.users++
    const ticket = owner.lock.unsafeEnqueue(true)
    let released = false
    return {
      granted: ticket.granted,
      release: Effect.zipRight(
        ticket.release,
        Effect.sync(() => {
          if (released) return
          released = true
          // Forget idle paths so the table does not grow with every file ever written.
          if (--owner.users === 0) paths.delete(path)
        })
      )
    }
  }

  const unsafeEnqueue = (key: ResourceKey): LockTicket => {
    const gateTicket = gate.unsafeEnqueue(key._tag === "Global")
    if (key._tag !== "File") return gateTicket
    const pathTicket = enqueuePath(key.path)
    return {
      granted: Effect.zipRight(gateTicket.granted, pathTicket.granted),
      release: Effect.zipRight(pathTicket.release, gateTicket.release)
    }
  }

  return {
    unsafeEnqueue,
    state: Effect.map(gate.state, (s) => ({ ...s, paths: [...paths.keys()] }))
  }
}

import { Deferred, Effect, FiberId } from "effect"

/**
 * A place in a lock's queue. `granted` completes when the holder may run; `release` gives the
 * place back whether it was still waiting or already held, and may be called more than once.
 */
export interface LockTicket {
  readonly granted: Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

export interface FairRwLockState {
  readonly readers: number
  readonly writer: boolean
  readonly queued: number
}

/**
 * A readers/writer lock with strict FIFO admission. Effect 3's Semaphore lets a newcomer barge past
 * queued waiters, which starves writers and breaks call order;
 * here a reader that arrives behind a queued writer waits for it.
 */
export interface FairRwLock {
  /**
   * Queues a request synchronously, so requests made one after another are served in that order
   * even before anyone awaits them. Must run inside `Effect.sync` or another synchronous step.
   */
  readonly unsafeEnqueue: (write: boolean) => LockTicket
  readonly withRead: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly withWrite: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly state: Effect.Effect<FairRwLockState>
}

interface Waiter {
  readonly write: boolean
  readonly gate: Deferred.Deferred<void>
  status: "queued" | "held" | "released"
}

export const unsafeMakeFairRwLock = (): FairRwLock => {
  let readers = 0
  let writer = false
  const queue: Array<Waiter> = []

  const admissible = (write: boolean) => (write ? !writer && readers === 0 : !writer)
  const admit = (w: Waiter) => {
    if (w.write) writer = true
    else readers++
    w.status = "held"
    Deferred.unsafeDone(w.gate, Effect.void)
  }
  const grant = () => {
    while (queue.length > 0 && admissible(queue[0]!.write)) admit(queue.shift()!)
  }
  const release = (w: Waiter) => {
    if (w.status === "queued") {
      queue.splice(queue.indexOf(w), 1)
    } else if (w.status === "held") {
      if (w.write) writer = false
      else readers--
    }
    w.status = "released"
    // A waiter that leaves the queue can unblock readers behind it, so grant in both cases.
    grant()
  }

  const unsafeEnqueue = (write: boolean): LockTicket => {
    const w: Waiter = { write, gate: Deferred.unsafeMake<void>(FiberId.none), status: "queued" }
    if (queue.length === 0 && admissible(write)) admit(w)
    else queue.push(w)
    return { granted: Deferred.await(w.gate), release: Effect.sync(() => release(w)) }
  }

  const withLock = (write: boolean) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const ticket = unsafeEnqueue(write)
        return restore(Effect.zipRight(ticket.granted, self)).pipe(Effect.ensuring(ticket.release))
      })
    )

  return {
    unsafeEnqueue,
    withRead: withLock(false),
    withWrite: withLock(true),
    state: Effect.sync(() => ({ readers, writer, queued: queue.length }))
  }
}

export const makeFairRwLock: Effect.Effect<FairRwLock> = Effect.sync(unsafeMakeFairRwLock)

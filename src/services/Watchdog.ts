import { type Clock, Duration, Effect, Mailbox, Stream } from "effect"

/**
 * A silence bound on a stream read over the network. Raw chunks count as liveness, so comments used
 * as keep-alives keep a stream alive. One reader fiber and one watchdog per stream, the watchdog
 * re-armed by each read: no fiber and no timer per read (`Effect.timeout` on every pull would fork
 * two fibers and arm a timer for each one). Reads that arrive while the consumer is busy reach it
 * together, as one chunk. Time the reader spends held up by a full buffer (a consumer that does not
 * take) is not silence. Before the first chunk the watchdog looks every `idleMs` at most, so the
 * idle deadline holds whichever bound is longer.
 */
export interface WatchdogOptions<E2> {
  /** Until the first chunk (for a stream built with `Stream.unwrapScoped`, sending the request is included). */
  readonly firstMs: number
  /** Longest silence between two chunks once they flow. */
  readonly idleMs: number
  /** The failure, told whether any chunk had come. */
  readonly onTimeout: (started: boolean) => E2
  /** The clock the bounds are kept on (default: the fiber's). */
  readonly clock?: Clock.Clock
}

/** Reads the reader may get ahead of its consumer by. */
const READ_AHEAD = 16

export const watchdog = <E2>(options: WatchdogOptions<E2>) =>
<A, E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<A, E | E2, R> => {
  const { clock, firstMs, idleMs, onTimeout } = options
  const now = clock === undefined ? Effect.clockWith((c) => c.currentTimeMillis) : clock.currentTimeMillis
  const sleep = (ms: number) => (clock === undefined ? Effect.sleep(ms) : clock.sleep(Duration.millis(ms)))
  return Stream.unwrapScoped(Effect.gen(function*() {
    const out = yield* Mailbox.make<A, E | E2>({ capacity: READ_AHEAD })
    let started = false
    let deadline = (yield* now) + firstMs
    const watch = Effect.gen(function*() {
      for (;;) {
        const at = yield* now
        if (at >= deadline) break
        // Never longer than idleMs: the first chunk moves the deadline nearer than a first wait
        // already begun would look again (a 300 s first wait would hide a 500 ms stall).
        yield* sleep(Math.min(deadline - at, idleMs))
      }
      yield* out.fail(onTimeout(started))
    })
    const reader = self.pipe(
      Stream.runForEachChunk((chunk) =>
        chunk.length === 0 ? Effect.void : Effect.suspend(() => {
          started = true
          // Held up by a consumer that does not take: no silence of the source's.
          deadline = Number.POSITIVE_INFINITY
          return Effect.zipRight(out.offerAll(chunk), Effect.map(now, (at) => void (deadline = at + idleMs)))
        })
      ),
      Mailbox.into(out)
    )
    yield* Effect.forkScoped(reader)
    yield* Effect.forkScoped(watch)
    return Mailbox.toStream(out)
  }))
}

import { Channel, type Chunk, type Clock, Duration, Effect, Mailbox, Option, Scope, Stream } from "effect"

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

/** The bound over a stream that already exists. */
export const watchdog = <E2>(options: WatchdogOptions<E2>) =>
<A, E, R>(self: Stream.Stream<A, E, R>): Stream.Stream<A, E | E2, R> =>
  watchdogOpen(options)(Effect.succeed(self))

/**
 * The bound over a stream that `open` makes (sending a request, say): the reader runs `open` itself,
 * in its own scope, so the first wait covers it and no stage of its own wraps it. A channel that
 * holds its own scope costs fewer steps than `Stream.unwrapScoped` (a stream of streams).
 */
export const watchdogOpen = <E2>(options: WatchdogOptions<E2>) =>
<A, E, R>(open: Effect.Effect<Stream.Stream<A, E, R>, E, R | Scope.Scope>): Stream.Stream<A, E | E2, Exclude<R, Scope.Scope>> =>
  Stream.fromChannel(Channel.acquireUseRelease(
    Effect.flatMap(Scope.make(), (scope) => Effect.map(Scope.extend(setUp(options, open), scope), (out) => ({ out, scope }))),
    ({ out }) => Mailbox.toChannel(out),
    ({ scope }, exit) => Scope.close(scope, exit)
  ))

/** The mailbox the consumer reads, with the reader and the watchdog forked in the caller's scope. */
const setUp = <E2, A, E, R>(options: WatchdogOptions<E2>, open: Effect.Effect<Stream.Stream<A, E, R>, E, R | Scope.Scope>) =>
  Effect.gen(function*() {
    const { clock, firstMs, idleMs, onTimeout } = options
    const now = clock === undefined ? Effect.clockWith((c) => c.currentTimeMillis) : clock.currentTimeMillis
    const sleep = (ms: number) => (clock === undefined ? Effect.sleep(ms) : clock.sleep(Duration.millis(ms)))
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
    // The reader pulls the source itself: `Stream.run*` would fork one more fiber per stream (the
    // channel executor's), and the pull loop is a handful of steps a read.
    const read = (pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>, R>): Effect.Effect<void, Option.Option<E>, R> =>
      Effect.flatMap(pull, (chunk) =>
        chunk.length === 0 ? read(pull) : Effect.suspend(() => {
          started = true
          // Held up by a consumer that does not take: no silence of the source's.
          deadline = Number.POSITIVE_INFINITY
          return Effect.zipRight(
            out.offerAll(chunk),
            Effect.flatMap(now, (at) => {
              deadline = at + idleMs
              return read(pull)
            })
          )
        }))
    // The source and its pull live in the reader's own scope: released by the reader as it ends or
    // is interrupted, never while it still pulls.
    const reader = open.pipe(
      Effect.flatMap(Stream.toPull),
      Effect.mapError(Option.some),
      Effect.flatMap(read),
      Effect.scoped,
      Effect.catchAll((error) => (Option.isSome(error) ? Effect.fail(error.value) : Effect.void)),
      Mailbox.into(out)
    )
    // Set up uninterruptibly (the channel's acquire): the fibers themselves must stay interruptible.
    yield* Effect.forkScoped(Effect.interruptible(reader))
    yield* Effect.forkScoped(Effect.interruptible(watch))
    return out
  })

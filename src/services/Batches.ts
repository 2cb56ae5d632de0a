import { Channel, Chunk, Effect, ExecutionStrategy, Exit, type Option, Queue, Scope, type Stream as S, Stream } from "effect"

/**
 * Keeping a batch whole. On the hot path a Stream chunk is a batch: the events one network read
 * produced. Per-element operators (`mapEffect`, `tap`, `filterEffect`) split
 * a chunk into single-element steps, so every stage from the socket to the store to stdout works a
 * chunk at a time instead, with one synchronous step per chunk.
 */

/** What one batch became: the elements to emit (in order), then optionally a failure or the end. */
export interface BatchStep<B, E> {
  readonly out: ReadonlyArray<B>
  /** Fails the stream after `out` is emitted. */
  readonly fail?: E
  /** Ends the stream after `out`; nothing more is pulled from upstream. */
  readonly stop?: boolean
}

/**
 * Maps every chunk with a synchronous, possibly stateful step: what a chunk yields is emitted as one
 * chunk (none when empty), so a failure or an end found mid-batch still emits what came before it.
 * `onEnd` runs when upstream ends without a `stop`, and may fail the stream (a truncated body).
 */
export const mapBatches = <A, B, E2>(
  f: (batch: Chunk.Chunk<A>) => BatchStep<B, E2>,
  onEnd?: () => E2 | undefined
) =>
<E, R>(self: S.Stream<A, E, R>): S.Stream<B, E | E2, R> => {
  const loop: Channel.Channel<Chunk.Chunk<B>, Chunk.Chunk<A>, E | E2, E, unknown, unknown> = Channel.readWithCause({
    onInput: (input: Chunk.Chunk<A>) => {
      const step = f(input)
      const emit = step.out.length > 0 ? Channel.write(Chunk.unsafeFromArray(step.out as Array<B>)) : Channel.void
      if (step.fail !== undefined) return Channel.zipRight(emit, Channel.fail(step.fail))
      return step.stop === true ? emit : Channel.zipRight(emit, loop)
    },
    onFailure: (cause) => Channel.failCause(cause),
    onDone: () => {
      const failure = onEnd?.()
      return failure === undefined ? Channel.void : Channel.fail(failure)
    }
  })
  return Stream.pipeThroughChannel(self, loop)
}

/**
 * A stream read by one effect per batch (`undefined` is the end), set up in a scope of its own that
 * closes when the stream does. One channel step per batch: no `unwrapScoped` (a stream of streams)
 * and no stage per concern, where the batch's whole treatment is a plain loop inside `pull`.
 */
export const pulling = <A, E, R, E2, R2>(
  setUp: Effect.Effect<Effect.Effect<Chunk.Chunk<A> | undefined, E, R>, E2, R2>
): S.Stream<A, E | E2, R | Exclude<R2, Scope.Scope>> =>
  Stream.fromChannel(Channel.acquireUseRelease(
    Effect.flatMap(Scope.make(), (scope) =>
      Effect.map(
        Effect.onError(Scope.extend(setUp, scope), (cause) => Scope.close(scope, Exit.failCause(cause))),
        (pull) => ({ pull, scope })
      )),
    ({ pull }) => {
      const loop: Channel.Channel<Chunk.Chunk<A>, unknown, E | E2, unknown, void, unknown, R | Exclude<R2, Scope.Scope>> = Channel.flatMap(
        Channel.fromEffect(pull),
        (batch) => (batch === undefined ? Channel.void : Channel.zipRight(Channel.write(batch), loop))
      )
      return loop
    },
    ({ scope }, exit) => Scope.close(scope, exit)
  ))

/** A stream's pull in a scope of its own under `parent`, for a `pulling` loop that reads it for a while and closes it itself. */
export interface OpenPull<A, E> {
  readonly pull: Effect.Effect<Chunk.Chunk<A>, Option.Option<E>>
  readonly scope: Scope.CloseableScope
}

export const openPull = <A, E>(parent: Scope.Scope, stream: S.Stream<A, E>): Effect.Effect<OpenPull<A, E>> =>
  Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (scope) =>
    Effect.map(Scope.extend(Stream.toPull(stream), scope), (pull) => ({ pull, scope })))

/**
 * Everything waiting in a queue, at least one and at most `max`. `Queue.takeBetween(q, 1, n)` (what
 * `Stream.fromQueue` uses) wakes with the one element an offer handed the waiting taker and leaves
 * the rest for another take: a batch published to a waiting follower went on in two pieces, and an
 * idle group-commit writer committed its first commit alone, the ones queued with it in a second group.
 */
export const takeBatch = <A>(queue: Queue.Dequeue<A>, max?: number): Effect.Effect<Chunk.Chunk<A>> => {
  const upTo = (n: number | undefined) => (n === undefined ? Queue.takeAll(queue) : Queue.takeUpTo(queue, n))
  return Effect.flatMap(upTo(max), (waiting) =>
    Chunk.isNonEmpty(waiting)
      ? Effect.succeed(waiting)
      : Effect.flatMap(Queue.take(queue), (first) =>
        Effect.map(upTo(max === undefined ? undefined : max - 1), (rest) => Chunk.prepend(rest, first))))
}

import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor } from "effect"

/** Counts the Effect run-loop steps and the fibers started under it. */
class StepCounter extends Supervisor.AbstractSupervisor<number> {
  steps = 0
  fibers = 0
  readonly value = Effect.sync(() => this.steps)
  override onEffect() {
    this.steps++
  }
  override onStart() {
    this.fibers++
  }
}

/**
 * Runs `effect` counting every step the runtime takes on its fiber and on the fibers it forks (they
 * inherit the supervisor and the flag; a fiber started from a Runtime, as FiberSet.run does, keeps the
 * default flags and is not counted).
 */
export const counted = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const counter = new StepCounter()
    const result = yield* effect.pipe(
      Effect.supervised(counter),
      Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
    )
    return { result, steps: counter.steps, fibers: counter.fibers }
  })

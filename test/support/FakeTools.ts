import { Deferred, Effect, FiberId, Schema } from "effect"
import { makeTool, type Tool } from "../../src/services/tools/Tool.js"

/**
 * Fake tools whose every call starts, then waits until the test releases it by call id. The probe
 * records the order of starts and ends and what was running when each call started.
 */
export interface Probe {
  readonly log: Array<string>
  readonly running: Set<string>
  /** For each call id: the ids that were running when it started. */
  readonly overlaps: Map<string, ReadonlyArray<string>>
  /** Completes when the call has started. */
  readonly started: (id: string) => Deferred.Deferred<void>
  /** Completing it lets the call finish. */
  readonly gate: (id: string) => Deferred.Deferred<void>
  readonly release: (id: string) => Effect.Effect<boolean>
  readonly startedCount: () => number
}

export const makeProbe = (): Probe => {
  const deferreds = new Map<string, Deferred.Deferred<void>>()
  const get = (key: string) => {
    let d = deferreds.get(key)
    if (d === undefined) {
      d = Deferred.unsafeMake<void>(FiberId.none)
      deferreds.set(key, d)
    }
    return d
  }
  const log: Array<string> = []
  return {
    log,
    running: new Set(),
    overlaps: new Map(),
    started: (id) => get(`started:${id}`),
    gate: (id) => get(`gate:${id}`),
    release: (id) => Deferred.succeed(get(`gate:${id}`), undefined),
    startedCount: () => log.filter((e) => e.startsWith("start ")).length
  }
}

const FakeArgs = Schema.Struct({
  file_path: Schema.optionalWith(Schema.String, { exact: true }),
  path: Schema.optionalWith(Schema.String, { exact: true }),
  command: Schema.optionalWith(Schema.String, { exact: true })
})

/** One probed call: records its start and what was running, waits until the test releases `id`, then ends. */
export const probedCall = (probe: Probe, id: string) =>
  Effect.gen(function*() {
    probe.overlaps.set(id, [...probe.running])
    probe.running.add(id)
    probe.log.push(`start ${id}`)
    yield* Deferred.succeed(probe.started(id), undefined)
    yield* Deferred.await(probe.gate(id)).pipe(Effect.ensuring(Effect.sync(() => probe.running.delete(id))))
    probe.log.push(`end ${id}`)
    return `output of ${id}`
  })

export const fakeTool = (name: string, probe: Probe): Tool =>
  makeTool({
    name,
    description: `fake ${name}`,
    parameters: FakeArgs,
    run: (_args, ctx) => probedCall(probe, ctx.callId)
  })

export const fakeTools = (probe: Probe): ReadonlyArray<Tool> =>
  ["Read", "Edit", "Write", "Bash", "Grep"].map((name) => fakeTool(name, probe))

/** Lets every fiber that can run, run: many scheduler turns, no clock time. */
export const settle = Effect.repeatN(Effect.yieldNow(), 100)

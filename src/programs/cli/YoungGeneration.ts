import { PerformanceObserver } from "node:perf_hooks"
import * as V8 from "node:v8"

/**
 * A command's peak memory is mostly V8's young generation: start-up allocates fast and much of it
 * survives (modules, schemas, layers), so V8 doubles the new space after scavenges until it
 * reaches its default ceiling of two 16 MB semi-spaces, 32 MB of the process's resident memory for
 * a process that lives a few seconds. Node sets that ceiling only from the command line
 * (`--max-semi-space-size`), which a bin cannot choose; what V8 does read while running is the
 * growth factor, so once the new space has reached `limitMb` the factor becomes 1 and it grows no
 * further. A few more scavenges buy about 15 MB less peak memory (bench `run-turn`).
 *
 * Only V8 versions known to have the flag are touched: an unknown flag is printed to stderr, and
 * stderr belongs to the command. The servers keep V8's sizing (`youngGenerationLimitMb`).
 */
const KNOWN_V8 = /^(11|12|13)\./

const newSpaceBytes = (): number => V8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_size ?? 0

/** `v8Version` is the running V8's (`process.versions.v8`), read by the bin. */
export const capYoungGeneration = (limitMb: number, v8Version: string): void => {
  if (!(limitMb > 0) || !KNOWN_V8.test(v8Version)) return
  const limit = limitMb * 1024 * 1024
  const freeze = () => V8.setFlagsFromString("--semi-space-growth-factor=1")
  if (newSpaceBytes() >= limit) return freeze()
  // A gc entry comes after each collection, the only time the new space can have grown.
  const observer = new PerformanceObserver(() => {
    if (newSpaceBytes() < limit) return
    freeze()
    observer.disconnect()
  })
  observer.observe({ entryTypes: ["gc"] })
}

/** The servers live for hours and take load: V8's own sizing (fewer scavenges) suits them. */
const LONG_LIVED: ReadonlySet<string | undefined> = new Set(["serve", "web"])

/** The cap for a command line (`baton <argv>`), in megabytes of new space; 0 for none. */
export const youngGenerationLimitMb = (argv: ReadonlyArray<string>): number => LONG_LIVED.has(argv[0]) ? 0 : 8

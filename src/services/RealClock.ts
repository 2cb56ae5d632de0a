import { Clock } from "effect"

/**
 * The wall clock, for what is a fact of the network or the process rather than of a run: an idle
 * connection, an SSE heartbeat, a shutdown bound. Timed with this even under a TestClock, which
 * drives only the runs' own waits (retries, reconnects).
 */
export const realClock = Clock.make()

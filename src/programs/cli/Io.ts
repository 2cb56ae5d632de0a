/**
 * The process's terminals, as the renderers need them. Programs take an `Io` instead of touching
 * `process` so that what is a TTY (and so what may prompt or colour) is decided in one place.
 */
export interface Io {
  readonly stdin: NodeJS.ReadStream
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly stdinTTY: boolean
  readonly stdoutTTY: boolean
  readonly stderrTTY: boolean
  readonly columns: () => number
  readonly env: Readonly<Record<string, string | undefined>>
}

export const nodeIo = (): Io => ({
  stdin: process.stdin,
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  stdinTTY: process.stdin.isTTY === true,
  stdoutTTY: process.stdout.isTTY === true,
  stderrTTY: process.stderr.isTTY === true,
  columns: () => process.stdout.columns ?? process.stderr.columns ?? 80,
  env: process.env
})

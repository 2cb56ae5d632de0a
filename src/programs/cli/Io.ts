/**
 * The process, as the commands need it: its terminals, its working directory and argv, and the two
 * ways out of the Effect runtime's hands (raising SIGINT, quitting at once). Programs take an `Io`
 * instead of touching `process`, so what is a TTY (and so what may prompt or colour) is decided in
 * one place, and the escapes below are the only ones.
 */
export interface Io {
  readonly stdin: NodeJS.ReadStream
  /** For a readline prompt that asks on stderr; everything else writes through `err`. */
  readonly stderr: NodeJS.WriteStream
  readonly out: (text: string) => void
  readonly err: (text: string) => void
  readonly stdinTTY: boolean
  readonly stdoutTTY: boolean
  readonly stderrTTY: boolean
  readonly columns: () => number
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: () => string
  readonly argv: ReadonlyArray<string>
  /**
   * Sends this process SIGINT. A readline prompt swallows Ctrl-C; handing it on makes it stop the
   * command the way Ctrl-C does anywhere else (the runtime interrupts the main fiber).
   */
  readonly raiseInterrupt: () => void
  /** Quits now, skipping finalizers: the last resort when an interrupt never finishes. */
  readonly exit: (code: number) => never
}

export const nodeIo = (): Io => ({
  stdin: process.stdin,
  stderr: process.stderr,
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  stdinTTY: process.stdin.isTTY === true,
  stdoutTTY: process.stdout.isTTY === true,
  stderrTTY: process.stderr.isTTY === true,
  columns: () => process.stdout.columns ?? process.stderr.columns ?? 80,
  env: process.env,
  cwd: () => process.cwd(),
  argv: process.argv,
  raiseInterrupt: () => void process.kill(process.pid, "SIGINT"),
  exit: (code) => process.exit(code)
})

/**
 * Splits a shell command line into its simple commands so that permission rules see every part:
 * `git status; rm -rf /` is two commands, and an allow rule must cover both.
 * Anything this scanner cannot see through (command substitution, process substitution,
 * redirection into a file, an unterminated quote) makes the line opaque: it can be denied, never
 * allowed by a rule.
 */
export interface SplitCommand {
  readonly parts: ReadonlyArray<string>
  readonly opaque: boolean
}

const SAFE_REDIRECT = /^\d*>(?:&\d+|\s*\/dev\/null(?![^\s;&|]))/

export const splitCommand = (line: string): SplitCommand => {
  const parts: Array<string> = []
  let current = ""
  let opaque = false
  let quote: "'" | "\"" | undefined
  const flush = () => {
    const part = current.trim().replace(/\s+/g, " ")
    if (part.length > 0) parts.push(part)
    current = ""
  }
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    const next = line[i + 1]
    if (quote === "'") {
      current += c
      if (c === "'") quote = undefined
      continue
    }
    if (c === "\\") {
      current += c + (next ?? "")
      i++
      continue
    }
    if (quote === "\"") {
      current += c
      if (c === "\"") quote = undefined
      else if (c === "`" || (c === "$" && next === "(")) opaque = true
      continue
    }
    if (c === "'" || c === "\"") {
      quote = c
      current += c
      continue
    }
    if (c === "`" || (c === "$" && next === "(") || ((c === "<" || c === ">") && next === "(")) {
      opaque = true
      current += c
      continue
    }
    if (c === ";" || c === "\n" || c === "|" || c === "&") {
      if (c === "&" && (line[i - 1] === ">" || next === ">")) {
        current += c
        continue
      }
      flush()
      if ((c === "|" || c === "&") && next === c) i++
      continue
    }
    if (c === ">") {
      // Writing into a file is a side effect no command-prefix rule describes.
      const prefix = /\d$/.test(current) ? current.slice(-1) : ""
      if (!SAFE_REDIRECT.test(prefix + line.slice(i))) opaque = true
    }
    current += c
  }
  if (quote !== undefined) opaque = true
  flush()
  return { parts, opaque }
}

/** `FOO=1 BAR=2 rm -rf x` → `rm -rf x`; used only for deny matching (env can change what an allowed command does). */
export const stripEnvAssignments = (part: string): string => part.replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|\S*)\s+)+/, "")

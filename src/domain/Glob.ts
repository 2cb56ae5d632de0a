/**
 * Glob patterns as users write them in rules and tool calls: `**` crosses directories, `*` and `?`
 * stay inside one path segment, `[abc]` classes, `{a,b}` alternatives. Pure string → RegExp.
 */
export const globToRegExp = (pattern: string): RegExp => {
  let out = ""
  let braceDepth = 0
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    switch (c) {
      case "*": {
        if (pattern[i + 1] === "*") {
          const atSegmentStart = i === 0 || pattern[i - 1] === "/"
          const atSegmentEnd = i + 2 === pattern.length || pattern[i + 2] === "/"
          if (atSegmentStart && atSegmentEnd) {
            // `**/` matches zero or more whole directories; a trailing `**` matches everything below.
            if (pattern[i + 2] === "/") {
              out += "(?:[^/]*(?:/|$))*"
              i += 2
            } else {
              out += ".*"
              i += 1
            }
            break
          }
          out += "[^/]*"
          i += 1
          break
        }
        out += "[^/]*"
        break
      }
      case "?":
        out += "[^/]"
        break
      case "[": {
        const close = pattern.indexOf("]", i + 1)
        if (close < 0) {
          out += "\\["
          break
        }
        const body = pattern.slice(i + 1, close).replace(/^!/, "^").replace(/\\/g, "\\\\")
        out += `[${body}]`
        i = close
        break
      }
      case "{":
        braceDepth++
        out += "(?:"
        break
      case "}":
        if (braceDepth > 0) {
          braceDepth--
          out += ")"
        } else out += "\\}"
        break
      case ",":
        out += braceDepth > 0 ? "|" : ","
        break
      default:
        out += /[.+^$()|\\]/.test(c) ? `\\${c}` : c
    }
  }
  while (braceDepth-- > 0) out += ")"
  return new RegExp(`^${out}$`)
}

export const matchesGlob = (pattern: string, path: string): boolean => globToRegExp(pattern).test(path)

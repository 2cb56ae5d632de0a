/**
 * Keeps what a process printed within bounded memory: the first `keep` characters, the last
 * `keep` characters and the total, so `yes` cannot exhaust the heap yet errors at the end survive.
 */
export interface OutputCapture {
  readonly push: (chunk: string) => void
  readonly total: () => number
  /** The text within `budget` characters; a cut in the middle is announced with `hint`. */
  readonly render: (budget: number, hint: string) => string
}

export const makeOutputCapture = (keep: number): OutputCapture => {
  let head = ""
  let tail = ""
  let total = 0
  return {
    push: (chunk) => {
      total += chunk.length
      if (head.length < keep) head += chunk.slice(0, keep - head.length)
      tail = (tail + chunk).slice(-keep)
    },
    total: () => total,
    render: (budget, hint) => {
      const room = Math.min(budget, keep)
      if (total <= room) return head
      const half = Math.floor(room / 2)
      const cut = total - 2 * half
      return `${head.slice(0, half)}\n[output truncated: ${cut} of ${total} characters omitted from the middle; ${hint}]\n${tail.slice(tail.length - half)}`
    }
  }
}

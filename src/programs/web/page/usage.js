// The conversation's tokens, requests and cost. One source of truth: the host's totals (what
// GET /v1/usage reports), loaded with the conversation and again whenever a task ends; only the
// running task's token_usage events are added on top, once each, as they arrive.
import { $, api, count, plural } from "./dom.js"

const dollars = (usd) => (usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`)

export const makeUsage = (conversationId, base) => {
  let server = base
  let task = { tokens: 0, requests: 0 }
  // The cost is the host's alone: shown while no event has been added since the host counted it.
  let cost = base.cost_usd
  const render = () => {
    const tokens = server.tokens + task.tokens
    const requests = server.requests + task.requests
    const priced = cost !== undefined ? ` · ${dollars(cost)}` : ""
    $("usage").textContent = `this task: ${count(task.tokens)} tokens · conversation: ${count(tokens)} tokens in ${plural(requests, "request")}${priced}`
    $("usage").dataset.tokens = String(tokens)
  }
  render()
  return {
    add: (e) => {
      task = { tokens: task.tokens + e.input_tokens + e.output_tokens, requests: task.requests + 1 }
      cost = undefined
      render()
    },
    /** A new task: its count starts at zero. */
    begin: () => {
      task = { tokens: 0, requests: 0 }
      render()
    },
    /** The host's totals again (a task ended, a title was made): what the task added is in them now. */
    refresh: async () => {
      const id = conversationId()
      const fresh = await api("GET", `/api/conversations/${id}/usage`)
      if (id !== conversationId()) return
      server = { tokens: fresh.tokens - task.tokens, requests: fresh.requests - task.requests }
      cost = fresh.cost_usd
      render()
    }
  }
}

// One conversation's events as a transcript. Every event goes through `show`, so a reload, a
// reconnect and a second tab build the same page. A pane is where one conversation's events go:
// the page's own, or a subagent's inside its Task call's card (nested, followed live). Within one
// model request the text (and reasoning) stays above that request's tool cards, however the events
// were batched.
import { newCard, setCall, setPreview, setResult, settleCard, startClock } from "./cards.js"
import { el, follow, notice, plural } from "./dom.js"
import { renderMarkdown } from "./markdown.js"
import { closeAll, enqueue, settle } from "./questions.js"

export const newPane = (root) => ({ root, text: null, reasoning: null, firstCard: null, calls: new Map() })

const steeringText = (text) => /^\[user_steering\]([\s\S]*)\[\/user_steering\]$/.exec(text.trim())?.[1]?.trim()

/** Text and reasoning go before the request's first tool card, if one is already there. */
const place = (pane, node) => {
  if (pane.firstCard !== null && pane.firstCard.parentNode === pane.root) pane.root.insertBefore(node, pane.firstCard)
  else pane.root.append(node)
  return node
}

/** Markdown re-rendered at most once a frame while it streams. */
const streamed = (cls) => {
  const node = el("div", { class: cls })
  node.source = ""
  node.dirty = false
  return node
}

const update = (node, text, render) => {
  node.source = text
  if (node.dirty) return
  node.dirty = true
  requestAnimationFrame(() => {
    node.dirty = false
    render(node, node.source)
  })
}

const renderReasoning = (box, text) => {
  box.body.textContent = text
  box.label.textContent = `Reasoning · ${plural(text.length, "character")}`
}

const reasoningBox = () => {
  const body = el("div", { class: "reasoning-body" })
  const label = el("span", {}, "Reasoning")
  const node = el("details", { class: "reasoning" }, el("summary", {}, label), body)
  return Object.assign(node, { body, label, source: "", dirty: false })
}

const cardOf = (pane, id, name) => {
  let card = pane.calls.get(id)
  if (card === undefined) {
    card = newCard(id, name)
    pane.calls.set(id, card)
    pane.root.append(card.root)
    if (pane.firstCard === null) pane.firstCard = card.root
  }
  return card
}

/** The pane of a subagent's events: inside its Task call's card, found in any pane shown so far. */
const childPane = (view, origin) => {
  const known = view.children.get(origin.conversation_id)
  if (known !== undefined) return known
  const parent = [view.pane, ...view.children.values()].map((p) => p.calls.get(origin.tool_call_id)).find((c) => c !== undefined)
  const root = el("section", { class: "subagent", "aria-label": `Subagent «${origin.description}»`, "data-conversation": origin.conversation_id })
  if (parent !== undefined) parent.body.append(root)
  else view.pane.root.append(root)
  const pane = newPane(root)
  view.children.set(origin.conversation_id, pane)
  return pane
}

/** One event, from the history (`live` false) or as it happens. */
export const show = (view, e, live) => {
  const pane = e.origin !== undefined ? childPane(view, e.origin) : view.pane
  // A subagent's call ids may repeat its parent's: the host answers them by conversation too.
  const key = e.origin !== undefined ? `${e.origin.conversation_id}/${e.tool_call_id}` : e.tool_call_id
  follow(view.scroller, () => showIn(view, pane, e, key, live))
}

const showIn = (view, pane, e, key, live) => {
  switch (e.type) {
    case "user_message": {
      const steering = steeringText(e.content)
      pane.root.append(el("div", { class: `msg user${steering !== undefined ? " steering" : ""}` }, steering ?? e.content))
      pane.firstCard = null
      break
    }
    case "text_delta":
      if (pane.text === null) pane.text = place(pane, streamed("msg assistant markdown"))
      update(pane.text, pane.text.source + e.content, renderMarkdown)
      break
    case "assistant_message":
      if (pane.text === null) renderMarkdown(place(pane, el("div", { class: "msg assistant markdown" })), e.content)
      else update(pane.text, e.content, renderMarkdown)
      pane.text = null
      break
    case "reasoning_delta":
      if (pane.reasoning === null) pane.reasoning = place(pane, reasoningBox())
      update(pane.reasoning, pane.reasoning.source + e.content, renderReasoning)
      break
    case "reasoning_message": {
      const box = pane.reasoning ?? place(pane, reasoningBox())
      box.source = e.content
      renderReasoning(box, e.content)
      pane.reasoning = null
      break
    }
    case "tool_call_delta": {
      const card = cardOf(pane, e.tool_call_id, e.name)
      setCall(card, e.name, card.raw + e.arguments)
      break
    }
    case "tool_call": {
      const card = cardOf(pane, e.tool_call_id, e.name)
      setCall(card, e.name, e.arguments)
      if (live && card.root.dataset.state === "pending") startClock(card)
      break
    }
    case "approval_request": {
      const card = cardOf(pane, e.tool_call_id, e.name)
      if (card.decided) break
      setCall(card, e.name, e.arguments)
      setPreview(card, e.preview)
      card.elapsed.textContent = ""
      enqueue(view, card, e, key)
      break
    }
    case "approval_decision": {
      const card = cardOf(pane, e.tool_call_id)
      const verb = e.decision === "deny" ? "denied" : e.decision === "allow_always" ? "allowed always" : "allowed"
      const by = e.source === "user" ? "by you" : e.source === "rule" ? `by rule ${e.rule ?? ""}` : `(${e.source}${e.reason ? `: ${e.reason}` : ""})`
      settle(view, card, key, `${verb} ${by}`)
      if (live && e.decision !== "deny") startClock(card)
      break
    }
    case "tool_return":
      setResult(cardOf(pane, e.tool_call_id), e)
      break
    case "request_begin":
      view.banner.clearWait()
      pane.text = null
      pane.reasoning = null
      pane.firstCard = null
      break
    case "request_end":
      if (e.origin === undefined && e.status === "retrying" && e.retry_in_ms !== undefined) view.banner.showWait(e.retry_in_ms, e.error?.message ?? "the model request failed")
      break
    case "wait":
      if (e.origin === undefined && e.retry_in_ms !== undefined) view.banner.showWait(e.retry_in_ms, e.reason === "busy" ? "the conversation is busy" : "the stream broke off")
      break
    case "turn_retried":
      notice(`retry ${e.attempt}`)
      break
    case "token_usage":
      // The server's totals already hold what the history recorded; a subagent's requests are its own conversation's.
      if (live && e.origin === undefined) view.usage.add(e)
      break
    case "stop_reason":
      if (e.origin !== undefined) break
      view.banner.clearWait()
      if (e.reason !== "requires_approval") {
        closeAll(view, "not answered: the task ended")
        for (const card of pane.calls.values()) settleCard(card, "not run")
      }
      if (e.reason !== "end_turn" && e.reason !== "requires_approval") notice(`stopped: ${e.reason}${e.error ? ` — ${e.error.message}` : ""}`, e.reason === "cancelled" ? "note" : "error")
      break
    case "abort":
      if (e.origin !== undefined) break
      view.banner.clearWait()
      closeAll(view, "not answered: the task stopped")
      for (const card of pane.calls.values()) settleCard(card, "stopped")
      notice("stopped")
      break
    case "summary_message":
      pane.root.append(el("details", { class: "reasoning" }, el("summary", {}, "Summary of the earlier conversation"), el("div", { class: "reasoning-body" }, e.content)))
      break
    case "compaction_begin":
      notice(`compacting the conversation (${e.reason})…`)
      break
    case "compaction_end":
      notice(e.status === "ok" ? "compacted" : `compaction failed${e.error ? `: ${e.error.message}` : ""}`)
      break
  }
}

/**
 * Subagents of calls in the history (their events are their own conversations', not the parent's):
 * loaded with the conversation and nested under the Task calls that started them.
 */
export const showSubagents = (view, subagents) => {
  for (const agent of subagents) {
    if (!view.pane.calls.has(agent.tool_call_id) || view.children.has(agent.id)) continue
    const origin = { conversation_id: agent.id, tool_call_id: agent.tool_call_id, description: agent.title ?? "subagent" }
    for (const item of agent.items) show(view, { ...item, origin }, false)
  }
}

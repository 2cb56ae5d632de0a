// Questions waiting for the person, a queue answered one at a time: the first is asked in its call's
// card, what the call will do (the diff, the command) above its buttons; the others wait their turn.
// y / a / n answer the question that has the focus, or the first one when nothing else has it.
import { callHeader, editDiff, writePreview } from "../../../domain/CallPreview.js"
import { diffView } from "./cards.js"
import { api, el, notice } from "./dom.js"

const KEYS = { y: "allow", a: "allow_always", n: "deny" }

const answer = (view, question, decision) => {
  question.node?.querySelectorAll("button").forEach((b) => (b.disabled = true))
  return api("POST", `/api/conversations/${view.id}/approvals/${encodeURIComponent(question.key)}`, { decision }).catch((e) => {
    question.node?.querySelectorAll("button").forEach((b) => (b.disabled = false))
    notice(e.message, "error")
  })
}

/** What the call will do, as the terminal shows it above its question. */
const preview = (e) => {
  const call = { name: e.name, arguments: e.arguments }
  const sent = Array.isArray(e.preview) ? e.preview : []
  if (e.name === "Edit") return diffView(sent.length > 0 ? sent : editDiff(call, undefined).filter((l) => l._tag !== "Note"))
  if (e.name === "Write") return diffView(sent.length > 0 ? sent : writePreview(call))
  if (e.name === "Bash") {
    let command = ""
    try {
      command = String(JSON.parse(e.arguments).command ?? "")
    } catch {
      command = e.arguments
    }
    return el("div", {},
      el("pre", { class: "terminal command" }, el("span", { class: "prompt", "aria-hidden": "true" }, "$ "), command),
      ...sent.filter((l) => l._tag === "Note" && !command.includes(l.text)).map((l) => el("p", { class: "hint" }, l.text)))
  }
  return undefined
}

const button = (label, key, cls, onclick, title) =>
  el("button", { type: "button", class: cls, title, onclick }, label, el("kbd", { "aria-hidden": "true" }, key))

const ask = (view, question, queued) => {
  const { e } = question
  const header = callHeader({ name: e.name, arguments: e.arguments })
  const who = e.origin !== undefined ? `Subagent «${e.origin.description}» wants to run` : "Allow"
  const group = el("div", { class: "approval", role: "group", "aria-label": `Approve ${e.name}`, tabindex: "0", "data-key": question.key },
    el("p", { class: "question" }, `${who} `, el("b", {}, header.tool), ` ${header.subject}?`),
    preview(e),
    el("div", { class: "buttons" },
      button("Allow", "y", "primary", () => answer(view, question, "allow")),
      button("Allow always", "a", "", () => answer(view, question, "allow_always"), `adds ${e.grant} for this session`),
      button("Deny", "n", "danger", () => answer(view, question, "deny"))),
    queued > 0 ? el("p", { class: "hint" }, `${queued} more waiting after this one`) : undefined)
  group.addEventListener("keydown", (event) => {
    const decision = KEYS[event.key]
    if (decision === undefined || event.ctrlKey || event.metaKey || event.altKey) return
    event.preventDefault()
    answer(view, question, decision)
  })
  return group
}

const render = (view) => {
  view.questions.forEach((question, i) => {
    if (i === 0) {
      const wasFocused = question.node?.contains(document.activeElement) ?? false
      question.node = ask(view, question, view.questions.length - 1)
      question.card.approval.replaceChildren(question.node)
      question.card.root.dataset.state = "asking"
      // A subagent's question sits inside its Task call's card: open the way to it.
      for (let d = question.card.root.parentElement?.closest("details"); d; d = d.parentElement?.closest("details")) d.open = true
      const idle = document.activeElement === null || document.activeElement === document.body || document.activeElement.tagName === "BUTTON"
      if (wasFocused || idle) question.node.focus({ preventScroll: true })
      question.node.scrollIntoView({ block: "nearest" })
    } else {
      question.node = undefined
      question.card.approval.replaceChildren(el("p", { class: "queued" }, `Waiting to ask: question ${i + 1} of ${view.questions.length}`))
    }
  })
}

/** A call asks: it joins the queue (asked again after a reload, it keeps its place). */
export const enqueue = (view, card, e, key) => {
  if (card.decided) return
  if (!view.questions.some((q) => q.key === key)) view.questions.push({ key, card, e, node: undefined })
  render(view)
}

/** The call was answered (here, in another tab, by a rule) or will not be asked any more. */
export const settle = (view, card, key, text) => {
  card.decided = true
  card.approval.replaceChildren(el("p", { class: "decided" }, text))
  const before = view.questions.length
  view.questions = view.questions.filter((q) => q.key !== key)
  if (view.questions.length !== before) render(view)
}

/** Questions still open when their task ends are closed, so no button offers to answer them. */
export const closeAll = (view, why) => {
  for (const q of view.questions) {
    q.card.decided = true
    q.card.approval.replaceChildren(el("p", { class: "decided" }, why))
  }
  view.questions = []
}

/** y / a / n with nothing focused answer the first question. */
export const listenForKeys = (current) =>
  document.addEventListener("keydown", (event) => {
    const view = current()
    if (view === null || view.questions.length === 0) return
    if (document.activeElement !== document.body && document.activeElement !== null) return
    const decision = KEYS[event.key]
    if (decision === undefined || event.ctrlKey || event.metaKey || event.altKey) return
    event.preventDefault()
    answer(view, view.questions[0], decision)
  })

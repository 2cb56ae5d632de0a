// The banner above the composer: a reconnect wait counting down ("Retry now" skips it, "Abandon"
// interrupts the task) or the auth lock (the model refused the credentials; "Retry").
import { $, api, el, notice } from "./dom.js"

export const makeBanner = (conversationId) => {
  let timer = undefined
  /** Moves the running countdown's end earlier by `ms` (a wait announced before this page saw it). */
  let shift = (_ms) => {}
  const post = (path) => api("POST", `/api/conversations/${conversationId()}/${path}`).catch((e) => notice(e.message, "error"))

  const clear = (kind) => {
    const banner = $("banner")
    if (banner.dataset.kind === kind) {
      banner.dataset.kind = ""
      banner.replaceChildren()
    }
  }

  const clearWait = () => {
    if (timer !== undefined) clearInterval(timer)
    timer = undefined
    shift = () => {}
    clear("wait")
  }

  const showWait = (ms, why) => {
    clearWait()
    let deadline = Date.now() + ms
    const countdown = el("span", { role: "timer", "aria-live": "off" })
    const tick = () => (countdown.textContent = `${why} · retrying in ${Math.max(0, Math.ceil((deadline - Date.now()) / 1000))} s`)
    shift = (ago) => {
      deadline -= ago
      tick()
    }
    tick()
    timer = setInterval(tick, 200)
    const banner = $("banner")
    banner.dataset.kind = "wait"
    banner.replaceChildren(
      countdown,
      el("button", { type: "button", class: "primary", onclick: () => post("skip-wait") }, "Retry now"),
      el("button", { type: "button", onclick: () => post("interrupt") }, "Abandon")
    )
  }

  const showLock = (lock) => {
    if (lock === null) return clear("lock")
    clearWait()
    const banner = $("banner")
    banner.dataset.kind = "lock"
    banner.replaceChildren(
      el("span", {}, `The model refused ${lock.credentials}: ${lock.message}. Update the credentials (this unlocks by itself) or press Retry.`),
      el("button", { type: "button", class: "primary", onclick: () => post("retry") }, "Retry")
    )
  }

  return { clearWait, showWait, showLock, shiftWait: (ms) => shift(ms) }
}

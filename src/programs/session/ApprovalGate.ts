import { Effect, Ref } from "effect"
import type { ApprovalDecision, Decision } from "../../domain/Events.js"
import { DENIED_TEXT, type Origin, type ToolCall } from "../../domain/Messages.js"
import { type Classification, classify, type CompiledRules, grantFor, type Rule } from "../../domain/Permissions.js"
import { runsSandboxed, type SandboxStatus, withSandbox } from "../../domain/Sandbox.js"

/** What the approver is asked: the call, what the rules said, and what "allow always" would grant. */
export interface ApprovalRequest {
  readonly call: ToolCall
  readonly classification: Classification
  readonly grant: Rule
  /** Set when a subagent asks: the approver shows whose call it is. */
  readonly origin?: Origin
}

/** A person (or a program) deciding one call. Asked once per call, one call at a time, in call order. */
export type Approver = (request: ApprovalRequest) => Effect.Effect<Decision>

export interface Gate {
  /** Decides one call: rules and grants first, then the approver, else the conservative default. */
  readonly decide: (call: ToolCall, approver: Approver | undefined) => Effect.Effect<ApprovalDecision>
  readonly grants: Effect.Effect<ReadonlyArray<Rule>>
}

export const NO_APPROVER_REASON = "no one was there to approve it (a non-interactive run)"

/**
 * What the model is told of a denied call: who denied it and, for a rule, which rule and where it is
 * written, so the model stops trying the same thing. A person's own denial keeps the plain text.
 */
export const deniedText = (decision: ApprovalDecision): string => {
  switch (decision.source) {
    case "rule":
      return `Tool call ${decision.reason ?? `denied by rule ${decision.rule ?? ""}`}. The rule denies every such call: do not retry it; find another way, or ask the user.`
    case "default":
      return `Tool call denied: ${decision.reason ?? NO_APPROVER_REASON}. A call that needs approval is allowed only by a rule in the settings' permissions.allow; do without it, or ask the user to allow it.`
    default:
      return DENIED_TEXT
  }
}

/** `sandbox`: the executor's; a Bash call's verdict depends on whether it will run inside. */
export const makeGate = Effect.fn("ApprovalGate.makeGate")(function*(rules: CompiledRules, workspace: string, sandbox?: SandboxStatus) {
  const grants = yield* Ref.make<ReadonlyArray<Rule>>([])
  const decide = Effect.fn("ApprovalGate.decide")(function*(call: ToolCall, approver: Approver | undefined) {
    const subject = { name: call.name, arguments: call.arguments, sandboxed: runsSandboxed(call, sandbox) }
    const classification = withSandbox(classify(subject, rules, yield* Ref.get(grants), workspace), call, sandbox)
    const base = { type: "approval_decision" as const, tool_call_id: call.tool_call_id }
    const rule = classification.rule !== undefined ? { rule: classification.rule } : {}
    if (classification.verdict === "deny" && classification.source === "rule") {
      const from = classification.rule !== undefined ? rules.sources?.[classification.rule] : undefined
      const reason = `denied by rule ${classification.rule}${from !== undefined ? ` in ${from}` : ""}`
      return { ...base, decision: "deny", source: "rule", ...rule, reason } as const
    }
    if (classification.verdict !== "ask") {
      return { ...base, decision: classification.verdict, source: classification.source === "session" ? "session" : "rule", ...rule } as const
    }
    if (approver === undefined) return { ...base, decision: "deny", source: "default", reason: NO_APPROVER_REASON } as const
    const grant = grantFor(call)
    const decision = yield* approver({ call, classification, grant })
    if (decision === "allow_always") {
      yield* Ref.update(grants, (current) => [...current, grant])
      return { ...base, decision, source: "user", rule: grant.text } as const
    }
    return { ...base, decision, source: "user" } as const
  })
  const gate: Gate = { grants: Ref.get(grants), decide }
  return gate
})

import { assert } from "vitest"

export interface ExpectedError {
  readonly status: number
  readonly code: string
  /** A word the message must contain, so it says what was wrong. */
  readonly mentions?: string
}

/**
 * The one error form of Baton's HTTP front-ends (`baton serve`'s API and `baton web`'s): the status,
 * and a JSON body with a stable snake_case `code` and a `message` a person can act on.
 */
export const assertErrorJson = (answer: { readonly status: number; readonly body: unknown }, expected: ExpectedError, label = expected.code) => {
  const body = (typeof answer.body === "string" ? JSON.parse(answer.body) : answer.body) as { readonly code?: unknown; readonly message?: unknown } | undefined
  assert.strictEqual(answer.status, expected.status, `${label}: ${JSON.stringify(body)}`)
  assert.strictEqual(body?.code, expected.code, label)
  assert.isString(body?.message, label)
  assert.isNotEmpty(body?.message, label)
  if (expected.mentions !== undefined) assert.include(body?.message, expected.mentions, label)
}

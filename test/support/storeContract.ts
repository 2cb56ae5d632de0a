import { describe } from "@effect/vitest"
import { answersContract } from "./contract/answers.js"
import { conversationContract } from "./contract/conversations.js"
import type { MakeStore } from "./contract/fixtures.js"
import { itemContract } from "./contract/items.js"
import { ledgerContract } from "./contract/ledger.js"
import { resumeContract } from "./contract/resume.js"
import { runContract } from "./contract/runs.js"

/** Registers the whole Store contract for one layer; `makeStore` must give a fresh, empty store each call. */
export const storeContract = (name: string, makeStore: MakeStore) =>
  describe(`Store contract: ${name}`, () => {
    conversationContract(makeStore)
    itemContract(makeStore)
    resumeContract(makeStore)
    runContract(makeStore)
    answersContract(makeStore)
    ledgerContract(makeStore)
  })

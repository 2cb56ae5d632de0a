import { Context, type Stream } from "effect"
import type { ProviderError } from "../domain/ProviderError.js"
import type { ProviderEvent, ProviderRequest } from "../domain/ProviderEvent.js"

/**
 * Baton's only contact with a language model. Every event the wire carries is accounted for:
 * an undecodable event or a stream that ends without its terminal event is a ProviderError.
 * Implementations: ProviderOpenAiChat, ProviderAnthropic, ProviderOpenAiResponses (live, HTTP + SSE),
 * ProviderScripted, ProviderCassette (record / replay).
 */
export class Provider extends Context.Tag("baton/Provider")<Provider, {
  readonly stream: (request: ProviderRequest) => Stream.Stream<ProviderEvent, ProviderError>
  /**
   * Who answers, for telemetry (`gen_ai.provider.name`) and the model a request without one gets;
   * absent on test doubles that do not say.
   */
  readonly info?: ProviderInfo
  /** The model a request without its own `model` gets (usage accounting names it); unknown for test doubles. */
  readonly model?: string
}>() {}

export interface ProviderInfo {
  readonly name: string
  readonly model?: string | undefined
}

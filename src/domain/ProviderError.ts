import { Schema } from "effect"

/**
 * Every way a model request can fail. The tag decides the recovery (see Recovery.ts),
 * so a provider layer must pick the tag by what happened, never by convenience.
 * Messages never contain credentials.
 */

/** No first byte within the first-byte timeout, or no event for the stall timeout mid-stream. */
export class ProviderTimeout extends Schema.TaggedError<ProviderTimeout>()("ProviderTimeout", {
  phase: Schema.Literal("first_byte", "stall"),
  afterMs: Schema.NonNegativeInt,
  message: Schema.String
}) {}

/** Connection refused, reset or closed before the stream ended. */
export class ProviderConnectionLost extends Schema.TaggedError<ProviderConnectionLost>()("ProviderConnectionLost", {
  message: Schema.String
}) {}

/** The stream could not be understood: cut off, bad JSON, an event that does not decode. */
export class ProviderMalformed extends Schema.TaggedError<ProviderMalformed>()("ProviderMalformed", {
  reason: Schema.Literal("truncated", "bad_json", "undecodable_event"),
  message: Schema.String
}) {}

export class ProviderRateLimited extends Schema.TaggedError<ProviderRateLimited>()("ProviderRateLimited", {
  retryAfterMs: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  message: Schema.String
}) {}

export class ProviderServerError extends Schema.TaggedError<ProviderServerError>()("ProviderServerError", {
  status: Schema.Int,
  message: Schema.String
}) {}

export class ProviderOverloaded extends Schema.TaggedError<ProviderOverloaded>()("ProviderOverloaded", {
  retryAfterMs: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  message: Schema.String
}) {}

/** A quota or subscription limit that lifts on its own (e.g. a per-minute plan quota). */
export class ProviderTransientQuota extends Schema.TaggedError<ProviderTransientQuota>()("ProviderTransientQuota", {
  retryAfterMs: Schema.optionalWith(Schema.NonNegativeInt, { exact: true }),
  message: Schema.String
}) {}

/** Billing or hard quota (`insufficient_quota`): waiting does not help. */
export class ProviderQuotaExceeded extends Schema.TaggedError<ProviderQuotaExceeded>()("ProviderQuotaExceeded", {
  message: Schema.String
}) {}

export class ProviderAuth extends Schema.TaggedError<ProviderAuth>()("ProviderAuth", {
  status: Schema.Int,
  message: Schema.String
}) {}

export class ProviderInvalidRequest extends Schema.TaggedError<ProviderInvalidRequest>()("ProviderInvalidRequest", {
  status: Schema.Int,
  message: Schema.String
}) {}

/** The prompt does not fit the model's window. */
export class ProviderContextOverflow extends Schema.TaggedError<ProviderContextOverflow>()("ProviderContextOverflow", {
  message: Schema.String
}) {}

/** The request body is over the provider's size limit (HTTP 413, `request_too_large`): images are the usual cause. */
export class ProviderRequestTooLarge extends Schema.TaggedError<ProviderRequestTooLarge>()("ProviderRequestTooLarge", {
  message: Schema.String
}) {}

/** A replay cassette has no recording for this request. */
export class ProviderReplayMiss extends Schema.TaggedError<ProviderReplayMiss>()("ProviderReplayMiss", {
  requestHash: Schema.String,
  message: Schema.String
}) {}

export const ProviderError = Schema.Union(
  ProviderTimeout,
  ProviderConnectionLost,
  ProviderMalformed,
  ProviderRateLimited,
  ProviderServerError,
  ProviderOverloaded,
  ProviderTransientQuota,
  ProviderQuotaExceeded,
  ProviderAuth,
  ProviderInvalidRequest,
  ProviderContextOverflow,
  ProviderRequestTooLarge,
  ProviderReplayMiss
)
export type ProviderError = typeof ProviderError.Type

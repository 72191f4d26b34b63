/**
 * Which validator checks which message type, and the check of a parsed
 * message's fields by its type.
 *
 * @module
 */
import { validateHeartbeat } from "./heartbeat_check.ts";
import {
  type FieldCheck,
  type GossipMessage,
  type MessageType,
  type MessageValidator,
} from "../messages/messages.ts";
import {
  validateAttestation,
  validateAuditFailure,
  validateCommitNotice,
  validateDeltaAnnounce,
  validateManifestAnnounce,
  validateRefutation,
  validateSlice,
  validateSliceFault,
  validateSlicePlan,
} from "./round_message_check.ts";

/**
 * The field validator for each message type. A new union member adds its
 * entry here, and the codec picks it up.
 */
export const MESSAGE_VALIDATORS: {
  readonly [K in MessageType]: MessageValidator<
    Extract<GossipMessage, { type: K }>
  >;
} = {
  heartbeat: validateHeartbeat,
  delta: validateDeltaAnnounce,
  manifest: validateManifestAnnounce,
  attest: validateAttestation,
  committed: validateCommitNotice,
  audit: validateAuditFailure,
  refute: validateRefutation,
  plan: validateSlicePlan,
  slice: validateSlice,
  fault: validateSliceFault,
};

/** Whether `type` names a message type this version of zoo-node knows. */
export function isMessageType(type: string): type is MessageType {
  return Object.hasOwn(MESSAGE_VALIDATORS, type);
}

/**
 * Checks every field of a parsed message whose `v` and `type` are already
 * known to be `PROTOCOL_VERSION` and a known type.
 */
export function validateFields(
  type: MessageType,
  obj: Readonly<Record<string, unknown>>,
): FieldCheck<GossipMessage> {
  return MESSAGE_VALIDATORS[type](obj);
}

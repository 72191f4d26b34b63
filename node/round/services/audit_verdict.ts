/**
 * What an audit of one segment found: the type the auditor returns, the
 * audit duty signs and a peer's conduct (behaviour.ts) may change.
 *
 * @module
 */
import type { AuditCheck } from "../../../protocol/messages/messages.ts";

/** What an audit found. */
export type AuditVerdict =
  | {
    passed: true;
    exact: boolean;
    /**
     * For a pass within tolerance: the replay's distance from the
     * committed end over the segment's progress (at most
     * `CROSS_KERNEL_TOLERANCE` of protocol/audit/segment_checks.ts); 0 when exact.
     */
    drift: number;
    /**
     * Templar's cheap check, recorded, not judged: the loss on one of the
     * peer's prescribed batches (the segment's last) at C(r) and at its
     * final state. An update that does not lower it did little on its own
     * data.
     */
    loss: { before: number; after: number };
    /**
     * Why where its round started could not be judged here (this peer
     * never saw what it builds on); the rest of the audit was.
     */
    unjudged?: string;
  }
  | {
    passed: false;
    check: AuditCheck;
    reason: string;
  };

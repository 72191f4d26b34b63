/**
 * One function per registry action, `(registry, params)`, in the manner of
 * viem's actions. Writes are simulated first (so a revert is decoded into a
 * {@linkcode ChainError} before any gas is spent) and wait for their
 * receipt. This module gathers them: the call core (`registry_call.ts`),
 * the transactions (`registry_writes.ts`), the reads
 * (`registry_reads.ts`) and an account's reward in a job
 * (`reward_status.ts`).
 *
 * @module
 */
export type { ReadAt, Registry, TxResult } from "./registry_call.ts";
export * from "./registry_writes.ts";
export * from "./registry_reads.ts";
export * from "./reward_status.ts";

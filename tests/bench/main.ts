/**
 * `deno task bench [name...] [--json] [--flag value]`: see dispatch.ts.
 *
 * @module
 */
import { giveGpuProbeARuntimeDir } from "../../node/train/gpu_env.ts";
import { runBenches } from "./dispatch.ts";

giveGpuProbeARuntimeDir();
// Exit explicitly: libp2p leaves a BroadcastChannel open (see ENVIRONMENT.md).
Deno.exit(await runBenches(Deno.args));

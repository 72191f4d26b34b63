/**
 * `deno task bench [name...] [--json] [--flag value]`: see dispatch.ts.
 *
 * @module
 */
import { runBenches } from "./dispatch.ts";

// Exit explicitly: libp2p leaves a BroadcastChannel open (see ENVIRONMENT.md).
Deno.exit(await runBenches(Deno.args));

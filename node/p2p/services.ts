/**
 * What every zoo-node libp2p host runs, whatever its transports: the
 * services (identify, ping, gossipsub with this protocol's limits) and the
 * dialling of discovered peers. `host.ts` builds the Deno node's host on
 * them, `node/browser/host.ts` a browser tab's.
 *
 * @module
 */
import { gossipsub } from "@libp2p/gossipsub";
import { identify } from "@libp2p/identify";
import type { Libp2p } from "@libp2p/interface";
import { ping } from "@libp2p/ping";
import { MAX_PLAN_MESSAGE_BYTES } from "../../protocol/messages/messages.ts";

/** The gossipsub service as this node uses it. */
export type PubSub = ReturnType<ReturnType<typeof gossipsub>>;

/** A libp2p node with the services zoo-node relies on. */
export type Host = Libp2p<{
  identify: ReturnType<ReturnType<typeof identify>>;
  ping: ReturnType<ReturnType<typeof ping>>;
  pubsub: PubSub;
}>;

/** The services of {@linkcode Host}, configured as the protocol needs. */
export function hostServices() {
  return {
    identify: identify(),
    ping: ping(),
    pubsub: gossipsub({
      allowPublishToZeroTopicPeers: true,
      emitSelf: false,
      // Our messages are at most 64 KiB, a slice plan 512 KiB; an RPC may
      // batch a few with control data, so a few times that bounds what a
      // peer can push.
      maxInboundDataLength: 4 * MAX_PLAN_MESSAGE_BYTES,
      // The default scores every peer down by 5 x (peers on its IP - 10)^2,
      // a Sybil defence: past 10 peers on one address (a lab, a devnet,
      // a NAT) every one of them falls under the graylist and no gossip
      // moves at all (16 on loopback heard none of each other). A job's
      // members are staked on chain, which prices Sybils instead.
      scoreParams: { IPColocationFactorWeight: 0 },
    }),
  };
}

/** libp2p 3 reports discovered peers but does not dial them by itself. */
export function dialDiscovered(host: Host): void {
  host.addEventListener("peer:discovery", (evt) => {
    const { id, multiaddrs } = evt.detail;
    if (id.equals(host.peerId) || host.getConnections(id).length > 0) return;
    host.dial(multiaddrs.length > 0 ? multiaddrs : id).catch(() => {});
  });
}

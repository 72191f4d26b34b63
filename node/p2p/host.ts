import { noise } from "@chainsafe/libp2p-noise";
import { yamux } from "@chainsafe/libp2p-yamux";
import { bootstrap } from "@libp2p/bootstrap";
import {
  circuitRelayServer,
  circuitRelayTransport,
} from "@libp2p/circuit-relay-v2";
import { gossipsub } from "@libp2p/gossipsub";
import { identify } from "@libp2p/identify";
import type { Libp2p, PrivateKey } from "@libp2p/interface";
import { mdns } from "@libp2p/mdns";
import { ping } from "@libp2p/ping";
import { tcp } from "@libp2p/tcp";
import { webSockets } from "@libp2p/websockets";
import { createLibp2p } from "libp2p";
import { MAX_MESSAGE_BYTES } from "../../protocol/messages.ts";

/** The gossipsub service as this node uses it. */
export type PubSub = ReturnType<ReturnType<typeof gossipsub>>;

/** A libp2p node with the services zoo-node relies on. */
export type Host = Libp2p<{
  identify: ReturnType<ReturnType<typeof identify>>;
  ping: ReturnType<ReturnType<typeof ping>>;
  pubsub: PubSub;
}>;

/** What the libp2p host is built from. */
export interface HostOptions {
  privateKey: PrivateKey;
  listen: string[];
  /** Addresses told to peers instead of the listen ones (default: those). */
  announce?: string[];
  bootstrap: string[];
  mdns: boolean;
  /** Relay for peers that cannot accept connections (see below). */
  relay?: boolean;
}

/** Peers a relaying node holds a slot for at once. */
export const MAX_RELAY_RESERVATIONS = 64;

/**
 * Creates and starts the libp2p host: TCP and WebSockets (listen on
 * `/ip4/…/tcp/N/ws`: what browsers and HTTP-only networks can reach),
 * noise, yamux, identify, ping and gossipsub with signed messages, plus the
 * bootstrap list and opt-in mDNS.
 *
 * Every node can dial through a circuit relay (v2), and one that cannot
 * accept connections (a laptop behind NAT) listens on `/p2p-circuit`: it
 * reserves a slot on a relaying peer it is connected to and announces the
 * relayed address, so peers reach it for its deltas and states. A node with
 * `relay` serves such slots. Its relayed connections carry no data or time
 * limit: rounds move deltas and training states of megabytes over them,
 * far past the protocol's default 128 KiB, so relaying is opt-in.
 */
export async function createHost(options: HostOptions): Promise<Host> {
  const discovery = [];
  if (options.bootstrap.length > 0) {
    discovery.push(bootstrap({ list: options.bootstrap, timeout: 100 }));
  }
  if (options.mdns) discovery.push(mdns({ interval: 5_000 }));
  const host = await createLibp2p({
    privateKey: options.privateKey,
    addresses: {
      listen: options.listen,
      ...(options.announce?.length ? { announce: options.announce } : {}),
    },
    transports: [tcp(), webSockets(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: discovery,
    services: {
      identify: identify(),
      ping: ping(),
      ...(options.relay
        ? {
          relay: circuitRelayServer({
            reservations: {
              maxReservations: MAX_RELAY_RESERVATIONS,
              applyDefaultLimit: false,
            },
          }),
        }
        : {}),
      pubsub: gossipsub({
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        // Our messages are at most 64 KiB; an RPC may batch a few of them
        // with control data, so a few times that bounds what a peer can push.
        maxInboundDataLength: 4 * MAX_MESSAGE_BYTES,
      }),
    },
  });
  // libp2p 3 reports discovered peers but does not dial them by itself.
  host.addEventListener("peer:discovery", (evt) => {
    const { id, multiaddrs } = evt.detail;
    if (id.equals(host.peerId) || host.getConnections(id).length > 0) return;
    host.dial(multiaddrs.length > 0 ? multiaddrs : id).catch(() => {});
  });
  return host as unknown as Host;
}

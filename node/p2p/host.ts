import { noise } from "@chainsafe/libp2p-noise";
import { yamux } from "@chainsafe/libp2p-yamux";
import { bootstrap } from "@libp2p/bootstrap";
import {
  circuitRelayServer,
  circuitRelayTransport,
} from "@libp2p/circuit-relay-v2";
import type { PrivateKey } from "@libp2p/interface";
import { mdns } from "@libp2p/mdns";
import { tcp } from "@libp2p/tcp";
import { webSockets } from "@libp2p/websockets";
import { createLibp2p } from "libp2p";
import { dialDiscovered, type Host, hostServices } from "./services.ts";

export type { Host, PubSub } from "./services.ts";

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

/** Addresses whose connections no per-address rate limit refuses. */
const LOOPBACK = ["/ip4/127.0.0.0/ipcidr/8", "/ip6/::1/ipcidr/128"];

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
    // libp2p takes at most 5 new connections a second from one address;
    // peers on this machine (a devnet) all come from loopback, and past 5
    // the rest were reset (16 peers: verifiers could not reach the leader).
    connectionManager: { allow: LOOPBACK },
    services: {
      ...hostServices(),
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
    },
  });
  dialDiscovered(host as unknown as Host);
  return host as unknown as Host;
}

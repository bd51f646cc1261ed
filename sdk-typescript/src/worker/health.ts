// The worker health endpoint (P-TEL-5): `GET /health` on 127.0.0.1, off by default. It only
// reads what the worker already knows; it never calls the server.
import { createServer, type Server } from "node:http";

/** The body of `GET /health` (P-TEL-5); times are RFC 3339, null before the first success. */
export interface WorkerHealth {
  status: "ok" | "stopping" | "unhealthy";
  worker_id: string;
  in_flight: number;
  free_slots: number;
  last_poll_at: string | null;
  last_heartbeat_at: string | null;
}

/** Where the endpoint listens: `http://${address}:${port}/health`. */
export interface HealthAddress {
  address: string;
  port: number;
}

/** What the endpoint reads from the worker. */
export interface HealthDeps {
  workerId: string;
  /** True once shutdown began (stop(), a signal, a `terminate` directive) or run() ended. */
  stopping(): boolean;
  inFlight(): number;
  freeSlots(): number;
  /** Epoch ms run() began; before the first success it counts as one (P-TEL-5). */
  startedAt(): number;
  /** Epoch ms of the last answered poll / heartbeat, undefined before the first. */
  lastPollAt(): number | undefined;
  lastHeartbeatAt(): number | undefined;
  /** The worker heartbeat interval in force, ms. */
  heartbeatIntervalMs(): number;
}

/** Healthy while the last answered poll or heartbeat is at most this many intervals old. */
export const HEALTHY_INTERVALS = 3;

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** P-TEL-5: the status the endpoint reports now, at `now` (epoch ms). */
export function workerHealth(d: HealthDeps, now = Date.now()): WorkerHealth {
  const poll = d.lastPollAt();
  const beat = d.lastHeartbeatAt();
  // P-TEL-5: before the first success the worker's start counts, so a new worker is
  // healthy for its first HEALTHY_INTERVALS intervals (any success is later than the start).
  const last = Math.max(poll ?? -Infinity, beat ?? -Infinity, d.startedAt());
  const fresh = now - last <= HEALTHY_INTERVALS * d.heartbeatIntervalMs();
  return {
    status: d.stopping() ? "stopping" : fresh ? "ok" : "unhealthy",
    worker_id: d.workerId,
    in_flight: d.inFlight(),
    free_slots: d.freeSlots(),
    last_poll_at: iso(poll),
    last_heartbeat_at: iso(beat),
  };
}

/** Serves `GET /health` on 127.0.0.1:`port` (0 picks a free port). */
export class HealthServer {
  private server: Server | undefined;
  private bound: HealthAddress | undefined;

  constructor(private readonly d: HealthDeps) {}

  /** The bound address once listening, else undefined. */
  get address(): HealthAddress | undefined {
    return this.bound;
  }

  async listen(port: number): Promise<HealthAddress> {
    const server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      if (req.method !== "GET" || path !== "/health") {
        res.writeHead(404, { "Content-Type": "application/json" }).end('{"status":"not_found"}');
        return;
      }
      const health = workerHealth(this.d);
      res.writeHead(health.status === "ok" ? 200 : 503, { "Content-Type": "application/json", "Cache-Control": "no-store" });
      res.end(JSON.stringify(health));
    });
    await new Promise<void>((ok, fail) => {
      server.once("error", fail);
      server.listen(port, "127.0.0.1", () => ok());
    });
    // A probe must never keep the process alive on its own.
    server.unref();
    this.server = server;
    const { address, port: bound } = server.address() as { address: string; port: number };
    this.bound = { address, port: bound };
    return this.bound;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
}

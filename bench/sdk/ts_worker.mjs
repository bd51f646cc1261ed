// The TypeScript SDK's Worker with a no-op handler, as a user would run it.
// Usage: node ts_worker.mjs URL CONCURRENCY  (stops on SIGTERM)
import { Orch8Client, Worker } from "../../sdk-typescript/dist/index.js";

const [baseUrl, concurrency] = process.argv.slice(2);
const worker = new Worker({
  client: new Orch8Client({ baseUrl }),
  workerId: "bench-ts",
  concurrency: Number(concurrency),
  handlers: { async noop() { return null; } },
});
await worker.run();

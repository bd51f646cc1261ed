// The README's Worker example: concurrency, heartbeats, cancellation and graceful shutdown
// come from the runtime. Run: ORCH8_URL=http://localhost:3001 npx tsx examples/worker.ts
import { Worker, PermanentError, RetryableError, type TaskContext } from "@orch8/sdk";

const worker = new Worker({
  workerId: "img-worker-1",
  concurrency: 4,
  handlers: {
    async process_image(ctx: TaskContext) {
      if (!ctx.params.image_url) throw new PermanentError("image_url is required");
      const res = await fetch(String(ctx.params.image_url), { signal: ctx.signal });
      if (res.status === 429) throw new RetryableError("rate limited", { retryAfterMs: 5000 });
      await ctx.heartbeat({ percent: 50 }, { step: "downloaded" }); // progress + checkpoint
      return { bytes: (await res.arrayBuffer()).byteLength };     // becomes the task's output
    },
  },
});
await worker.run(); // until SIGTERM / SIGINT / stop() / a terminate directive
console.log("worker stopped", worker.stats());

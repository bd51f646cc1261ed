// Workflows (P-SDK-25), from the README's "Workflows": a two-step sequence run by this
// SDK's own Worker. Type-checked by `make lint`, run as written by the tests.
// Run: ORCH8_URL=http://localhost:3001 npx tsx examples/workflow.ts
import { Orch8Client, Worker, type TaskContext } from "@orch8/sdk";

async function main() {
  const client = new Orch8Client();

  // Step 2 takes step 1's output: {"$from": "steps.resize.output.url"} (P-WF-2).
  await client.defineSequence({
    name: "thumbnail",
    steps: [
      { id: "resize", handler: "resize", params: { url: { $from: "input.image_url" }, width: 800 } },
      { id: "publish", handler: "publish", params: { url: { $from: "steps.resize.output.url" } } },
    ],
  });
  const instance = await client.startInstance({ sequence: "thumbnail", input: { image_url: "https://example.com/cat.png" } });

  const worker = new Worker({
    client,
    handlers: {
      resize: (ctx: TaskContext) => ({ url: `${ctx.params.url}?w=${ctx.params.width}` }),
      publish: (ctx: TaskContext) => ({ published: true, url: ctx.params.url }),
    },
  });
  const running = worker.run();

  // Returns the instance once completed, failed or cancelled (default timeout 5 minutes).
  const done = await client.waitInstance(instance.id, { timeoutMs: 60_000 });
  console.log(done.status, JSON.stringify(done.output));
  // completed {"published":true,"url":"https://example.com/cat.png?w=800"}

  await worker.stop();
  await running;
}

main(); // no top-level await (CommonJS has none); a rejection ends the process with its error

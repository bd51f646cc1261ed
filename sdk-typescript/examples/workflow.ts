// Workflows (P-SDK-25), from the README's "Workflows": a sequence in Orch8's block format
// (templates, a try_catch) run by this SDK's own Worker. Type-checked by `make lint`, run
// as written by the tests.
// Run: ORCH8_URL=http://localhost:3001 npx tsx examples/workflow.ts
import { Orch8Client, PermanentError, Worker, type TaskContext } from "@orch8/sdk";

async function main() {
  const client = new Orch8Client();

  // "{{ ... }}" params are filled in when the step starts (P-WF-12); a template that is the
  // whole string keeps the value's JSON type. The catch reads publish's error.
  await client.defineSequence({
    name: "thumbnail",
    blocks: [
      { type: "step", id: "resize", handler: "resize",
        params: { url: "{{context.data.image_url}}", width: "{{context.config.width}}" } },
      { type: "try_catch", id: "delivery",
        try_block: [
          { type: "step", id: "publish", handler: "publish",
            params: { url: "{{steps.resize.output.url}}", private: "{{context.data.private}}" } },
        ],
        catch_block: [
          { type: "step", id: "archive", handler: "archive",
            params: { url: "{{steps.resize.output.url}}", why: "{{steps.publish.error.message}}" } },
        ] },
    ],
  });
  const instance = await client.startInstance({
    sequence: "thumbnail",
    context: { data: { image_url: "https://example.com/cat.png", private: true }, config: { width: 800 } },
  });

  const worker = new Worker({
    client,
    handlers: {
      resize: (ctx: TaskContext) => ({ url: `${ctx.params.url}?w=${ctx.params.width}` }),
      publish: (ctx: TaskContext) => {
        if (ctx.params.private === true) throw new PermanentError("private images are not published", { code: "private" });
        return { published: true, url: ctx.params.url };
      },
      archive: (ctx: TaskContext) => ({ archived: ctx.params.url, why: ctx.params.why }),
    },
  });
  const running = worker.run();

  // Returns the instance once completed, failed or cancelled (default timeout 5 minutes).
  const done = await client.waitInstance(instance.id, { timeoutMs: 60_000 });
  console.log(done.status, JSON.stringify(done.output));
  // completed {"archived":"https://example.com/cat.png?w=800","why":"private images are not published"}
  console.log(done.steps.map((s) => `${s.key}:${s.lane ?? "-"}:${s.status}`).join(" "));
  // resize:-:completed delivery:-:completed publish:try:failed archive:catch:completed

  await worker.stop();
  await running;
}

main(); // no top-level await (CommonJS has none); a rejection ends the process with its error

import { Orch8Client } from "@orch8/sdk";

const client = new Orch8Client({ baseUrl: "http://localhost:3001" });

async function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

while (true) {
  const task = await client.pollTask({
    handler_names: ["process_image"],
    worker_id: "img-worker-1",
  });

  if (!task) {
    await sleep(1000);
    continue;
  }

  try {
    const result = await processImage(task.params);
    await client.completeTask(task.id, { output: result });
  } catch (err: any) {
    await client.failTask(task.id, {
      error: err.message,
      retryable: true,
    });
  }
}

// Added to seed 000's example (everything above is verbatim): a stand-in for real work.
async function processImage(params: Record<string, unknown>) {
  return { url: `https://cdn.example.com/processed.png?src=${String(params.image_url)}`, width: params.width };
}

// The README's worker in TypeScript, type-checked by `make lint`.
// Run: ORCH8_URL=http://localhost:3001 npx tsx examples/worker.ts (Node 20 cannot run .ts itself).
import { PermanentError, Worker, type TaskContext } from "@orch8/sdk";

const worker = new Worker({
  concurrency: 4,
  handlers: {
    // Counts the words of params.text; the return value is the task's output.
    word_count(ctx: TaskContext) {
      const text = ctx.params.text;
      if (typeof text !== "string") throw new PermanentError("params.text must be a string", { code: "bad_input" });
      const words = text.split(/\s+/).filter(Boolean);
      return { words: words.length, longest: words.reduce((a, w) => (w.length > a.length ? w : a), "") };
    },
  },
});

// Until SIGTERM / Ctrl-C; then finishes what it holds and deregisters. No top-level await:
// in a CommonJS project (npm init -y's default) this file compiles to CommonJS.
worker.run().then(() => console.log("worker stopped", worker.stats()));

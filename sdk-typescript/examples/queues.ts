// Several queues (P-SDK-23), from the README's "Several queues": one worker drains `high`
// before it takes anything from `low`. Type-checked by `make lint`, run by the tests.
// Run: ORCH8_URL=http://localhost:3001 npx tsx examples/queues.ts
import { Worker, type TaskContext } from "@orch8/sdk";

const worker = new Worker({
  concurrency: 4,
  // Strict order: a task of "low" is claimed only when "high" has none to give.
  // For a weighted mix instead, add: queueWeights: { high: 3, low: 1 }
  queueNames: ["high", "low"],
  handlers: {
    send_email(ctx: TaskContext) {
      console.log(`send_email ${ctx.id} from queue ${ctx.queueName}`); // the task's own queue
      return { sent: true, queue: ctx.queueName };
    },
  },
});

worker.run(); // until SIGTERM / Ctrl-C; then it finishes what it holds and deregisters

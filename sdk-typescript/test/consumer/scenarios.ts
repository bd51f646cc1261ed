// What running each runnable README block means: each scenario names the README files
// (`<!-- consumer-test: FILE -->`) it runs and drives them against a server of its own, in a
// consumer project (project.ts). The consumer test checks that the scenarios cover exactly
// the README's runnable blocks.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FAST_FLAGS, REPO_ROOT, TestServer, waitFor } from "../helpers/server.js";
import type { Project, Running } from "./project.js";

export interface Scenario {
  files: string[];
  run(project: Project): Promise<void>;
}

async function withServer(fn: (server: TestServer) => Promise<void>, flags: Record<string, number | string> = FAST_FLAGS): Promise<void> {
  const server = await TestServer.start(flags);
  try {
    await fn(server);
  } finally {
    await server.dispose();
  }
}

/** Fails as soon as `program` exits, with its output: a long-running example must not. */
function stillRunning(program: Running, file: string): Promise<never> {
  return program.exited.then((code) => {
    throw new Error(`${file} exited (${code}) early:\n${program.out()}`);
  });
}

/** SIGTERM, then the clean exit the README promises (finish, deregister, exit 0). */
async function stop(program: Running, file: string): Promise<void> {
  program.child.kill("SIGTERM");
  assert.equal(await program.exited, 0, `${file} after SIGTERM:\n${program.out()}`);
}

/** A worker block fed by enqueue.mjs, then by more tasks straight through the API. */
function wordCountWorker(workerFile: string): Scenario {
  return {
    files: [workerFile, "enqueue.mjs"],
    run: (project) => withServer(async (server) => {
      const env = { ORCH8_URL: server.url };
      const worker = project.start(workerFile, env);
      try {
        // enqueue.mjs waits for its task for ever; a dead worker or the deadline ends the wait.
        const enqueue = await Promise.race([project.run("enqueue.mjs", env, 30_000), stillRunning(worker, workerFile)]);
        assert.equal(enqueue.code, 0, enqueue.out);
        assert.match(enqueue.out, /^completed \{ words: 5, longest: 'quick' \}$/m);
        const client = server.client();
        const texts = ["a bb ccc", "one", "lorem ipsum dolor sit amet"];
        const tasks = await client.enqueueBatch(texts.map((text) => ({ handler_name: "word_count", params: { text } })));
        const bad = await client.enqueue({ handler_name: "word_count", params: {} });
        for (const [i, t] of tasks.entries()) {
          const done = await waitFor(async () => {
            const got = await client.getTask(t.id);
            return got.status === "completed" ? got : undefined;
          }, `task ${i} to complete`, 20_000, 50);
          const words = texts[i]!.split(" ");
          assert.deepEqual(done.output, { words: words.length, longest: words.reduce((a, w) => (w.length > a.length ? w : a), "") });
        }
        const failed = await waitFor(async () => {
          const got = await client.getTask(bad.id);
          return got.status === "failed" ? got : undefined;
        }, "the bad task to fail", 20_000, 50);
        assert.equal(failed.error?.code, "bad_input");
        await stop(worker, workerFile);
        assert.match(worker.out(), /worker stopped \{[^}]*tasks_completed: 4/, worker.out());
      } finally {
        worker.child.kill("SIGKILL");
      }
    }),
  };
}

const workflow: Scenario = {
  files: ["workflow.ts"],
  run: (project) => withServer(async (server) => {
    const { code, out } = await project.run("workflow.ts", { ORCH8_URL: server.url });
    assert.equal(code, 0, out);
    assert.equal(out.trim(), [
      'completed {"archived":"https://example.com/cat.png?w=800","why":"private images are not published"}',
      "resize:-:completed delivery:-:completed publish:try:failed archive:catch:completed",
    ].join("\n"));
  }),
};

const queues: Scenario = {
  files: ["queues.ts"],
  run: (project) => withServer(async (server) => {
    const worker = project.start("queues.ts", { ORCH8_URL: server.url });
    try {
      const client = server.client();
      const low = await client.enqueue({ handler_name: "send_email", queue_name: "low", params: { to: "a@example.com" } });
      const high = await client.enqueue({ handler_name: "send_email", queue_name: "high", params: { to: "b@example.com" } });
      for (const [t, queue] of [[high, "high"], [low, "low"]] as const) {
        const done = await waitFor(async () => {
          if (worker.child.exitCode !== null) throw new Error(`queues.ts exited ${worker.child.exitCode}: ${worker.out()}`);
          const got = await client.getTask(t.id);
          return got.status === "completed" ? got : undefined;
        }, `queues.ts to complete the ${queue} task`, 30_000, 50);
        assert.deepEqual(done.output, { sent: true, queue });
      }
      assert.match(worker.out(), new RegExp(`send_email ${high.id} from queue high`));
      await stop(worker, "queues.ts");
    } finally {
      worker.child.kill("SIGKILL");
    }
  }),
};

const controls: Scenario = {
  files: ["controls.ts"],
  run: (project) => withServer(async (server) => {
    const { code, out } = await project.run("controls.ts", { ORCH8_URL: server.url });
    assert.equal(code, 0, out);
    assert.match(out, /^\[ \[ 'emails', false, 5 \] \]\n\[ \[ 'render', 2 \] \]\n15 points\n$/, out);
    const stats = await server.client().queueStats();
    assert.deepEqual(stats.queue_controls, [], "with its cap removed and not paused, emails has no control left");
  }),
};

const concurrencyKeys: Scenario = {
  files: ["keys.ts"],
  run: (project) => withServer(async (server) => {
    const { code, out } = await project.run("keys.ts", { ORCH8_URL: server.url });
    assert.equal(code, 0, out);
    assert.equal(out, "concurrency_key 1 1\nc-7 2\n");
  }),
};

const instanceKeys: Scenario = {
  files: ["instance-keys.ts"],
  run: (project) => withServer(async (server) => {
    const { code, out } = await project.run("instance-keys.ts", { ORCH8_URL: server.url });
    assert.equal(code, 0, out);
    assert.equal(out, "running [ 'pending' ]\nconcurrency_key 2 2\nacme 2 [ 'running' ]\n");
  }),
};

const rateLimits: Scenario = {
  files: ["rates.ts"],
  run: (project) => withServer(async (server) => {
    const { code, out } = await project.run("rates.ts", { ORCH8_URL: server.url });
    assert.equal(code, 0, out);
    assert.equal(out, "partner-api 10 1000 2\nrate_limited\n[ [ 'partner-api', 1 ] ]\nno_poller\n");
  }),
};

const tracedWorker: Scenario = {
  files: ["traced-worker.mjs"],
  run: (project) => withServer(async (server) => {
    const worker = project.start("traced-worker.mjs", { ORCH8_URL: server.url });
    try {
      // The example enqueues its own task; its worker completes it.
      const client = server.client();
      const done = await waitFor(async () => {
        if (worker.child.exitCode !== null) throw new Error(`traced-worker.mjs exited ${worker.child.exitCode}: ${worker.out()}`);
        const [task] = (await client.listTasks({ handler_name: "word_count", status: ["completed"] })).tasks;
        return task;
      }, "traced-worker.mjs to complete its task", 30_000, 50);
      assert.deepEqual(done.output, { words: 1 });
      await stop(worker, "traced-worker.mjs");
    } finally {
      worker.child.kill("SIGKILL");
    }
  }),
};

const tenants: Scenario = {
  files: ["tenants.ts"],
  run: async (project) => {
    const dir = mkdtempSync(join(tmpdir(), "orch8-keys-"));
    const keys = join(dir, "keys.toml");
    const entry = (id: string, secret: string, role: string) =>
      `[[key]]\nid = "${id}"\nsha256 = "${createHash("sha256").update(secret).digest("hex")}"\nrole = "${role}"\ntenant = "acme"\n\n`;
    writeFileSync(keys, entry("p-acme", "producer-secret-acme", "producer") + entry("a-acme", "admin-secret-acme", "admin"));
    try {
      await withServer(async (server) => {
        const { code, out } = await project.run("tenants.ts", { ORCH8_URL: server.url, ORCH8_API_KEY: "producer-secret-acme" });
        assert.equal(code, 0, out);
        assert.equal(out, "p-acme producer acme\n403 forbidden\n");
        const admin = server.client({ apiKey: "admin-secret-acme", tenant: "acme" });
        assert.deepEqual((await admin.listTasks()).tasks.map((t) => t.handler_name), ["resize"]);
      }, { ...FAST_FLAGS, "keys-file": keys });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

// The handler unit tests (P-KIT-1..6) need no server: nothing listens where ORCH8_URL points.
const unitTests: Scenario = {
  files: ["word-count.test.ts"],
  run: async (project) => {
    // This test runs under `node --test`, whose NODE_TEST_CONTEXT would make the child report
    // in the runner's binary protocol; a user's shell has none, so the child prints TAP.
    const { code, out } = await project.run("word-count.test.ts", { ORCH8_URL: "http://127.0.0.1:9", NODE_TEST_CONTEXT: "" });
    assert.equal(code, 0, out);
    assert.match(out, /^# pass 4$/m, out);
    assert.match(out, /^# fail 0$/m, out);
  },
};

// Workflow tests start their own server with the test clock (startTestServer): the
// monorepo's, given through ORCH8_SERVER as a user would; nothing else listens.
const workflowTests: Scenario = {
  files: ["workflow.test.ts"],
  run: async (project) => {
    const started = Date.now();
    const { code, out } = await project.run("workflow.test.ts", {
      ORCH8_SERVER: join(REPO_ROOT, ".venv", "bin", "orch8-server"), ORCH8_URL: "http://127.0.0.1:9", NODE_TEST_CONTEXT: "",
    });
    assert.equal(code, 0, out);
    assert.match(out, /^# pass 2$/m, out);
    assert.match(out, /^# fail 0$/m, out);
    console.log(`# workflow.test.ts (a 10-minute backoff and a one-hour sleep skipped) ran in ${Date.now() - started} ms, server start included`);
  },
};

export const SCENARIOS: Scenario[] = [wordCountWorker("worker.mjs"), wordCountWorker("worker.cjs"), workflow, queues, controls, concurrencyKeys, instanceKeys, rateLimits, tracedWorker, tenants, unitTests, workflowTests];

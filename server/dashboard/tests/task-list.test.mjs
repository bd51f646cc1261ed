// The task list: every filter narrows what GET /tasks returns, a queue bar click filters,
// cursor paging walks the pages, the list refreshes itself while tasks are live, and (seed
// 001) a workflow step's task shows its instance and step, filters by instance, and the time
// range defaults to the last hour.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eventually, launchBrowser, openPage, screenshot, startServer, texts } from "./harness.mjs";

let server, browser, page;
const ids = {};

before(async () => {
  [server, browser] = await Promise.all([startServer(), launchBrowser()]);
  const bulk = Array.from({ length: 30 }, (_, i) => ({ handler_name: "bulk_import", queue_name: "batch", params: { row: i } }));
  await server.enqueue(bulk);
  const email = await server.enqueue([
    { handler_name: "send_email", params: { to: "a@example.com" } },
    { handler_name: "send_email", params: { to: "b@example.com" } },
    { handler_name: "send_email", params: { to: "c@example.com" } },
    { handler_name: "send_email", params: { to: "d@example.com" } },
  ]);
  const gpu = await server.enqueue([
    { handler_name: "resize", queue_name: "gpu", params: { w: 800 } },
    { handler_name: "resize", queue_name: "gpu", params: { w: 400 } },
    { handler_name: "resize", queue_name: "gpu", params: { w: 200 } },
  ]);
  await server.enqueue([{ handler_name: "report", delay_ms: 3_600_000 }]);
  // Two instances of a one-step sequence: one task each, with context.instance_id / step_id.
  const seq = await server.api("POST", "/sequences", { name: "thumbs", steps: [{ id: "shrink", handler: "wf_shrink" }] });
  assert.equal(seq.status, 201, JSON.stringify(seq.body));
  for (const n of [1, 2]) {
    const inst = await server.api("POST", "/instances", { sequence: "thumbs", input: { n } });
    assert.equal(inst.status, 201, JSON.stringify(inst.body));
    (ids.instances ??= []).push(inst.body.id);
  }
  // One email fails by hand, one runs on worker mail-1 and one is left for the refresh test.
  assert.equal((await server.api("POST", `/tasks/${email[0].id}/fail`, { error: "mailbox closed" })).status, 200);
  const claim = await server.api("POST", "/workers/tasks/poll", { handler_names: ["send_email"], worker_id: "mail-1", wait_ms: 0 });
  assert.equal(claim.status, 200);
  ids.failed = email[0].id;
  ids.running = claim.body.id;
  ids.gpu = gpu.map((t) => t.id);
  page = await openPage(browser, `${server.url}/ui/`);
  await page.waitForSelector("tr[data-task]");
});
after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Wait until the list shows exactly `n` rows and every row satisfies `each`. */
async function rowsSettle(what, n, each = () => true) {
  return eventually(async () => {
    const rows = await page.$$eval("tr[data-task]", (trs) =>
      trs.map((tr) => ({ id: tr.dataset.task, status: tr.dataset.status, cells: [...tr.cells].map((c) => c.textContent.trim()) })),
    );
    return rows.length === n && rows.every(each) ? rows : false;
  }, what, 8000);
}

const handlerOf = (r) => r.cells[1];
const queueOf = (r) => r.cells[2];

test("handler filter narrows the list", async () => {
  await rowsSettle("first page unfiltered", 25);
  await page.fill("#f-handler", "send_email");
  const rows = await rowsSettle("only send_email", 4, (r) => handlerOf(r) === "send_email");
  assert.deepEqual(rows.map((r) => r.status).sort(), ["failed", "pending", "pending", "running"]);
  await screenshot(page, "tasks-filtered");
});

test("status filter, then worker filter", async () => {
  await page.selectOption("#f-status", "failed");
  const failed = await rowsSettle("failed send_email", 1, (r) => r.status === "failed");
  assert.equal(failed[0].id, ids.failed);
  await page.selectOption("#f-status", "");
  await page.fill("#f-handler", "");
  await page.fill("#f-worker", "mail-1");
  const mine = await rowsSettle("tasks of mail-1", 1);
  assert.equal(mine[0].id, ids.running);
  assert.equal(mine[0].cells[5], "mail-1");
  assert.deepEqual(mine[0].cells.slice(6, 8), ["—", "—"], "a plain task has no instance or step");
  // Filters live in the URL: a reload keeps them.
  assert.match(await page.evaluate(() => location.hash), /worker=mail-1/);
  await page.reload();
  await rowsSettle("tasks of mail-1 after reload", 1, (r) => r.id === ids.running);
  assert.equal(await page.inputValue("#f-worker"), "mail-1");
  await page.click("#f-clear");
  await rowsSettle("cleared", 25);
});

test("clicking a queue bar filters by its queue, handler and status", async () => {
  await page.click('.queue-row[data-queue="gpu"][data-handler="resize"] .queue-name');
  const rows = await rowsSettle("gpu / resize", 3, (r) => queueOf(r) === "gpu" && handlerOf(r) === "resize");
  assert.deepEqual(rows.map((r) => r.id).sort(), [...ids.gpu].sort());
  assert.equal(await page.inputValue("#f-queue"), "gpu");
  await page.click('.queue-row[data-queue="default"][data-handler="report"] [data-count="scheduled"]');
  await rowsSettle("scheduled report", 1, (r) => r.status === "scheduled" && handlerOf(r) === "report");
  assert.equal(await page.inputValue("#f-status"), "scheduled");
  await page.click("#f-clear");
});

test("task id search finds exactly that task, and says so when there is none", async () => {
  await page.fill("#f-id", ids.gpu[1]);
  await rowsSettle("one task by id", 1, (r) => r.id === ids.gpu[1]);
  await page.fill("#f-id", "task_doesnotexist");
  await page.waitForSelector("text=No task with id");
  assert.equal((await page.$$("tr[data-task]")).length, 0);
  await page.click("#f-clear");
});

test("seed 001: the time range defaults to the last hour, sent as created_after", async () => {
  await page.goto(`${server.url}/ui/`);
  await rowsSettle("first page", 25);
  assert.equal(await page.inputValue("#f-range"), "1h");
  assert.equal(await page.evaluate(() => location.hash), "#/", "the default is not written into the link");
  const hourAgo = (u) => Math.abs(Date.now() - 3_600_000 - Date.parse(new URL(u).searchParams.get("created_after"))) < 60_000;
  const first = page.requests.find((u) => new URL(u).pathname === "/tasks");
  assert.ok(first && hourAgo(first), `the first /tasks call asks for the last hour: ${first}`);
  const sent = page.requests.length;
  await page.selectOption("#f-range", "all");
  // A refresh sent just before the choice may be reported after it, still for the last
  // hour: wait for a /tasks call without the bound (none comes if the choice is ignored).
  const anyTime = await eventually(
    () => page.requests.slice(sent).find((u) => new URL(u).pathname === "/tasks" && !new URL(u).searchParams.has("created_after")),
    "a /tasks request for any time",
  );
  assert.equal(new URL(anyTime).searchParams.get("created_after"), null);
  assert.match(await page.evaluate(() => location.hash), /range=all/);
  await page.click("#f-clear");
  assert.equal(await page.inputValue("#f-range"), "1h", "Clear goes back to the last hour");
  await rowsSettle("recent tasks still listed", 25);
});

test("seed 001: a workflow step's task shows its instance (linked) and step, and the list filters by instance", async () => {
  const [one, two] = ids.instances;
  await page.fill("#f-handler", "wf_shrink");
  const rows = await rowsSettle("the two step tasks", 2, (r) => r.cells[7] === "shrink");
  assert.deepEqual(rows.map((r) => r.cells[6].replace(/filter$/, "")).sort(), [one, two].sort());
  await screenshot(page, "tasks-workflow");
  await page.fill("#f-handler", "");
  // The row's filter button: only that instance's task, whatever the other filters said.
  await page.click(`[data-filter-instance="${one}"]`);
  await rowsSettle("the task of instance one", 1, (r) => r.cells[6].startsWith(one));
  assert.equal(await page.inputValue("#f-instance"), one);
  assert.match(await page.evaluate(() => location.hash), new RegExp(`instance=${one}`));
  assert.ok(page.requests.some((u) => new URL(u).searchParams.get("instance_id") === one), "sent as instance_id");
  // Typed into the bar, and kept by a reload.
  await page.fill("#f-instance", two);
  await rowsSettle("the task of instance two", 1, (r) => r.cells[6].startsWith(two));
  await page.reload();
  await rowsSettle("instance two after reload", 1, (r) => r.cells[6].startsWith(two));
  // Not an instance id at all: the server's 422 is shown, not an empty list.
  await page.fill("#f-instance", "nope");
  await page.waitForSelector('#task-list .problem[data-code="validation_error"]');
  await page.fill("#f-instance", two);
  await rowsSettle("instance two again", 1);
  // The instance cell links to its page.
  await page.click(`td[data-instance="${two}"] a`);
  await page.waitForSelector(`[data-testid="instance-id"]:text("${two}")`);
  await page.goto(`${server.url}/ui/`);
  await rowsSettle("back to the overview, unfiltered", 25);
});

test("cursor paging walks older and newer pages", async () => {
  await page.fill("#f-handler", "bulk_import");
  const first = await rowsSettle("page 1 of bulk_import", 25, (r) => handlerOf(r) === "bulk_import");
  await page.click("#page-older");
  const second = await rowsSettle("page 2 of bulk_import", 5, (r) => handlerOf(r) === "bulk_import");
  assert.equal(new Set([...first, ...second].map((r) => r.id)).size, 30, "pages do not overlap");
  assert.equal(await page.textContent('[data-testid="page-info"]'), "Page 2 · 5 tasks");
  assert.equal(await page.isDisabled("#page-older"), true);
  await page.click("#page-newer");
  const again = await rowsSettle("back on page 1", 25);
  assert.deepEqual(again.map((r) => r.id), first.map((r) => r.id));
  await page.click("#f-clear");
});

test("a refresh keeps the rows it does not change: focus, a text selection and the nodes survive it", async () => {
  await page.fill("#f-queue", "gpu");
  await rowsSettle("the three gpu tasks", 3, (r) => r.status === "pending");
  const [first, second, third] = ids.gpu;
  // Mark each row's node, focus the first row's link, select the second row's id.
  await page.$$eval("tr[data-task]", (trs) => trs.forEach((tr) => { tr.orch8Mark = tr.dataset.task; }));
  await page.focus(`tr[data-task="${first}"] a`);
  await page.evaluate((id) => getSelection().selectAllChildren(document.querySelector(`tr[data-task="${id}"] td a`)), second);
  // The list refreshes every 0.5 s while tasks are pending. Refreshes do not overlap, so once
  // the third GET /tasks is answered the first two have been drawn.
  const refreshes = async (n) => {
    let seen = 0;
    const count = (r) => { if (new URL(r.url()).pathname === "/tasks") seen += 1; };
    page.on("response", count);
    try {
      await eventually(() => seen >= n, `${n} refreshes of the list`, 8000, 20);
    } finally {
      page.off("response", count);
    }
  };
  await refreshes(3);
  const state = () => page.evaluate(() => ({
    marked: [...document.querySelectorAll("tr[data-task]")].map((tr) => [tr.dataset.task, tr.orch8Mark ?? null, tr.dataset.status]),
    focused: document.activeElement?.closest("tr")?.dataset.task ?? null,
    selected: getSelection().toString(),
  }));
  let now = await state();
  assert.deepEqual(now.marked.map(([id, mark]) => [id, mark]).sort(), [first, second, third].map((id) => [id, id]).sort(), "the same row nodes");
  assert.equal(now.focused, first, "focus stays on the first row's link");
  assert.equal(now.selected, second, "the selection of the second row's id stays");
  // A row whose task changed is brought up to date in place: its status, same node.
  const claim = await server.api("POST", "/workers/tasks/poll", { handler_names: ["resize"], queue_name: "gpu", worker_id: "gpu-1", wait_ms: 0 });
  assert.equal(claim.status, 200);
  now = await eventually(async () => {
    const s = await state();
    return s.marked.some(([id, , status]) => id === claim.body.id && status === "running") ? s : false;
  }, "the claimed task shown running", 8000, 20);
  assert.ok(now.marked.every(([id, mark]) => mark === id), `every row kept its node: ${JSON.stringify(now.marked)}`);
  assert.equal(now.focused, first, "focus still on the first row's link");
  assert.deepEqual(page.errors, []);
  await page.click("#f-clear");
});

test("the list refreshes itself while a visible task is pending or running", async () => {
  await page.fill("#f-worker", "mail-1");
  await rowsSettle("running task shown", 1, (r) => r.status === "running");
  assert.equal((await texts(page, ".pager .live")).length, 1, "live indicator shown");
  const done = await server.api("POST", `/workers/tasks/${ids.running}/complete`, { output: { sent: true } });
  assert.equal(done.status, 200);
  await rowsSettle("completed without a reload", 1, (r) => r.status === "completed");
  assert.equal((await texts(page, ".pager .live")).length, 0, "nothing live: no more refreshing");
  assert.deepEqual(page.errors, []);
});

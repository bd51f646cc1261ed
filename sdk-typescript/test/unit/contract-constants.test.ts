// The worker's defaults and limits are the contract's (x-orch8-constants and the schema
// numbers named by x-orch8-sdk-constant, generated into src/generated/constants.ts). The
// client reads them from there; the worker's modules still name their own copies, so this
// pins each copy to the generated value until they import it.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as C from "../../src/generated/constants.js";
import { MAX_BATCH_ITEMS, OUTAGE_INITIAL_MS, OUTAGE_MAX_MS } from "../../src/worker/batcher.js";
import { DETAILS_PREVIEW_BYTES, MAX_DETAILS_BYTES, MAX_MESSAGE_BYTES } from "../../src/worker/bound.js";
import { MIN_HEARTBEAT_MS } from "../../src/worker/heartbeats.js";
import { MAX_POLL_BATCH, MAX_POLL_HANDLERS } from "../../src/worker/poller.js";
import { MAX_QUEUE_NAMES, MAX_QUEUE_WEIGHT, MIN_QUEUE_WEIGHT } from "../../src/worker/queues.js";
import { DEFAULT_CONCURRENCY, DEFAULT_GRACE_PERIOD_MS, DEFAULT_HEARTBEAT_INTERVAL_MS } from "../../src/worker/worker.js";
import { WORKER_RETRY_AFTER_CAP_MS } from "../../src/outage.js";

const pairs: [string, number, number][] = [
  ["MAX_POLL_BATCH", MAX_POLL_BATCH, C.MAX_POLL_BATCH_SIZE],
  ["MAX_POLL_HANDLERS", MAX_POLL_HANDLERS, C.MAX_POLL_HANDLERS],
  ["MAX_BATCH_ITEMS", MAX_BATCH_ITEMS, C.MAX_COMPLETION_BATCH_ITEMS],
  ["OUTAGE_INITIAL_MS", OUTAGE_INITIAL_MS, C.OUTAGE_BACKOFF_BASE_MS],
  ["OUTAGE_MAX_MS", OUTAGE_MAX_MS, C.OUTAGE_BACKOFF_CAP_MS],
  ["MAX_MESSAGE_BYTES", MAX_MESSAGE_BYTES, C.MAX_FAILURE_MESSAGE_BYTES],
  ["MAX_DETAILS_BYTES", MAX_DETAILS_BYTES, C.MAX_FAILURE_DETAILS_BYTES],
  ["DETAILS_PREVIEW_BYTES", DETAILS_PREVIEW_BYTES, C.FAILURE_DETAILS_PREVIEW_BYTES],
  ["MIN_HEARTBEAT_MS", MIN_HEARTBEAT_MS, C.MIN_HEARTBEAT_INTERVAL_MS],
  ["MAX_QUEUE_NAMES", MAX_QUEUE_NAMES, C.MAX_QUEUE_NAMES],
  ["MIN_QUEUE_WEIGHT", MIN_QUEUE_WEIGHT, C.MIN_QUEUE_WEIGHT],
  ["MAX_QUEUE_WEIGHT", MAX_QUEUE_WEIGHT, C.MAX_QUEUE_WEIGHT],
  ["DEFAULT_CONCURRENCY", DEFAULT_CONCURRENCY, C.DEFAULT_CONCURRENCY],
  ["DEFAULT_GRACE_PERIOD_MS", DEFAULT_GRACE_PERIOD_MS, C.DEFAULT_GRACE_PERIOD_MS],
  ["DEFAULT_HEARTBEAT_INTERVAL_MS", DEFAULT_HEARTBEAT_INTERVAL_MS, C.DEFAULT_HEARTBEAT_INTERVAL_MS],
  ["WORKER_RETRY_AFTER_CAP_MS", WORKER_RETRY_AFTER_CAP_MS, C.WORKER_RETRY_AFTER_CAP_MS],
];

for (const [name, typed, contract] of pairs) {
  test(`${name} is the contract's value`, () => assert.equal(typed, contract));
}

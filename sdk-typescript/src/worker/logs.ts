// P-SDK-31: every line the worker logs is an event of the protocol's table. The message
// starts with "orch8: " and ends with the cause (P-SDK-22); the fields go after it as one
// object (`logger.warn(message, fields)`), the event's name in `event`.
import { Orch8Error } from "../errors.js";
import { isOutage } from "../outage.js";
import type { ClaimedTask } from "../types.js";
import { describeCause } from "./cause.js";
import type { ErrorOperation, Logger } from "./stats.js";

export type Level = "debug" | "info" | "warn" | "error";
export type Fields = Record<string, unknown>;

/** `task_id`, `handler` and `attempt` of a task's lines. */
export const taskFields = (task: ClaimedTask): Fields => ({ task_id: task.id, handler: task.handler_name, attempt: task.attempt });

/** `status` and `code` of the answer behind an error; only `code` for a transport error. */
export function answerFields(err: unknown): Fields {
  if (!(err instanceof Orch8Error)) return {};
  return err.status > 0 ? { status: err.status, code: err.code } : { code: err.code };
}

export class WorkerLog {
  constructor(private readonly logger: Logger, private readonly workerId: string, readonly url: string) {}

  /** One line: `event` at `level`, its fields, and the cause ending the message. */
  line(level: Level, event: string, message: string, fields: Fields = {}, cause?: string): void {
    const all: Fields = { event, worker_id: this.workerId, ...fields };
    if (cause) all.cause = cause;
    this.logger[level](`orch8: ${message}${cause ? `: ${cause}` : ""}`, all);
  }

  /** A call the worker made failed: `outage` (P-SDK-16) or `refused`, naming the URL and cause. */
  callFailed(operation: ErrorOperation, err: unknown, subject: string, then = "", more: Fields = {}): void {
    const event = isOutage(err) ? "outage" : "refused";
    const message = `${subject} ${event === "outage" ? "failed" : "refused"}${then ? `, ${then}` : ""}`;
    this.line("warn", event, message, { operation, url: this.url, ...answerFields(err), ...more }, describeCause(err));
  }
}

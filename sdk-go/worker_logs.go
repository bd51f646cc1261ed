package orch8

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// line logs one event of P-SDK-31's table: its name in "event", attrs beside it (every line
// carries worker_id from the worker's logger), and cause, when given, as an attribute and
// at the end of the message so a plain handler shows why (P-SDK-22).
func (w *Worker) line(level slog.Level, event, msg, cause string, attrs ...any) {
	ctx := context.Background()
	if !w.log.Enabled(ctx, level) {
		return
	}
	all := append([]any{"event", event}, attrs...)
	if cause != "" {
		all = append(all, "cause", cause)
		msg += ": " + cause
	}
	w.log.Log(ctx, level, "orch8: "+msg, all...)
}

// callFailed logs a call the worker made that failed: "outage" (P-SDK-16) or "refused",
// naming the operation, the server URL and the cause: "<subject> failed|refused[, <then>]".
func (w *Worker) callFailed(op string, err error, subject, then string, attrs ...any) {
	event, verb := "refused", "refused"
	if IsOutage(err) {
		event, verb = "outage", "failed"
	}
	msg := subject + " " + verb
	if then != "" {
		msg += ", " + then
	}
	all := append([]any{"operation", op, "url", w.client.cfg.BaseURL}, answerAttrs(err)...)
	w.line(slog.LevelWarn, event, msg, causeText(err), append(all, attrs...)...)
}

// causeText is one wording of an error in every SDK: "HTTP 413 payload_too_large: <detail>",
// "connection_error: no answer from http://h:3001: connection refused", or "<type>: <text>".
func causeText(err error) string {
	var pe *ProblemError
	if errors.As(err, &pe) {
		if pe.Status == 0 {
			return pe.Code + ": " + pe.Detail
		}
		text := fmt.Sprintf("HTTP %d %s", pe.Status, answerCode(pe))
		if pe.Detail != "" {
			text += ": " + pe.Detail
		}
		return text
	}
	return typeName(err) + ": " + err.Error()
}

// answerAttrs are the status and code of the answer behind err; only the code for a
// transport error.
func answerAttrs(err error) []any {
	var pe *ProblemError
	if !errors.As(err, &pe) {
		return nil
	}
	if pe.Status == 0 {
		return []any{"code", pe.Code}
	}
	return []any{"status", pe.Status, "code", answerCode(pe)}
}

// taskAttrs are the fields of a task's lines.
func taskAttrs(t *Task) []any {
	return []any{"task_id", t.ID, "handler", t.HandlerName, "attempt", t.Attempt}
}

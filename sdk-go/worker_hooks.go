package orch8

import (
	"errors"
	"fmt"
)

// callHook runs one hook; a panic is logged with the hook's name and swallowed, so an
// observer never breaks the worker (P-SDK-11).
func callHook[E any](w *Worker, name string, hook func(E), ev E) {
	if hook == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("orch8: hook panicked; ignored", "hook", name, "panic", fmt.Sprint(p), "type", typeName(p))
		}
	}()
	hook(ev)
}

func (w *Worker) fireError(op string, err error) {
	callHook(w, "OnError", w.opts.Hooks.OnError, ErrorEvent{Operation: op, Err: err})
}

// causeAttrs names why a call failed (P-SDK-22): the HTTP status, problem code and detail,
// or for a transport error the server URL and its innermost cause (in the problem's detail,
// "no answer from http://h:3001: connection refused"), never only a wrapper's text.
func causeAttrs(err error) []any {
	if err == nil {
		return nil
	}
	var pe *ProblemError
	if errors.As(err, &pe) {
		attrs := []any{"code", pe.Code}
		if pe.Status > 0 {
			attrs = append(attrs, "status", pe.Status)
		}
		if pe.Detail != "" {
			attrs = append(attrs, "detail", pe.Detail)
		}
		if pe.RetryAfter > 0 {
			attrs = append(attrs, "retry_after", pe.RetryAfter)
		}
		return append(attrs, "err", err.Error())
	}
	return []any{"err", err.Error(), "type", typeName(err)}
}

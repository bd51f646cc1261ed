package orch8

import (
	"fmt"
	"log/slog"
)

// callHook runs one hook; a panic is logged with the hook's name and swallowed, so an
// observer never breaks the worker (P-SDK-11).
func callHook[E any](w *Worker, name string, hook func(E), ev E) {
	if hook == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			w.line(slog.LevelWarn, "hook_error", "hook "+name+" panicked; ignored", typeName(p)+": "+fmt.Sprint(p), "hook", name)
		}
	}()
	hook(ev)
}

func (w *Worker) fireError(op string, err error) {
	callHook(w, "OnError", w.opts.Hooks.OnError, ErrorEvent{Operation: op, Err: err})
}

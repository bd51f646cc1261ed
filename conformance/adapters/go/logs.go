package main

import (
	"context"
	"log/slog"
	"strings"
)

// logEvents reports each log line at info and above as a `log` event with its attributes
// (P-SDK-31), and passes it on to the text handler on stderr.
type logEvents struct {
	next  slog.Handler
	attrs []slog.Attr
}

func (h logEvents) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h logEvents) Handle(ctx context.Context, r slog.Record) error {
	fields := map[string]any{}
	add := func(a slog.Attr) bool {
		fields[a.Key] = a.Value.Resolve().Any()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	level := strings.ToLower(r.Level.String())
	if level == "warn" {
		level = "warning"
	}
	emit("log", nil, map[string]any{"level": level, "message": r.Message, "fields": fields})
	return h.next.Handle(ctx, r)
}

func (h logEvents) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logEvents{next: h.next.WithAttrs(attrs), attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

// WithGroup is not used by the SDK; groups are flattened.
func (h logEvents) WithGroup(name string) slog.Handler {
	return logEvents{next: h.next.WithGroup(name), attrs: h.attrs}
}

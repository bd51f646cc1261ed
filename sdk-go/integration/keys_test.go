package integration_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

// runKeysExample runs the README's "Concurrency keys" program (P-KEY-1, P-KEY-5) against the
// real server: the second task of key c-42 is held (waiting.reason concurrency_key, 1 of 1
// slot taken), and the workflow step's task carries its rendered key and limit.
func runKeysExample(t *testing.T, bin string) {
	runPrinting(t, bin, "concurrency_key 1 1\nc-7 2\n")
}

// runInstanceKeysExample runs the README's instance key program (P-KEY-7) against the real
// server: the third report of key acme (limit 2) is running with its step pending and says
// why (2 of 2 slots taken); once the first is cancelled it starts and its step runs.
func runInstanceKeysExample(t *testing.T, bin string) {
	runPrinting(t, bin, "running [pending]\nconcurrency_key 2 2\nacme 2 [running]\n")
}

// runPrinting runs a README program that exits by itself against a server of its own and
// checks everything it printed.
func runPrinting(t *testing.T, bin, want string) {
	s := startServer(t)
	var stdout strings.Builder
	logs := &refserver.LogBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), "ORCH8_URL="+s.URL)
	cmd.Stdout, cmd.Stderr = &stdout, logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("example: %v\n%s", err, tail(logs.String(), 4000))
	}
	if got := stdout.String(); got != want {
		t.Fatalf("example printed %q, want %q", got, want)
	}
}

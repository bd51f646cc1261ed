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

// runRatesExample runs the README's "Rate limits" program (P-RATE-1, P-RATE-4) against the
// real server: with no worker, the third task naming a limit of burst 2 is held
// (waiting.reason rate_limited, counted in the limit's held), and removing the limit frees it.
func runRatesExample(t *testing.T, bin string) {
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
	if got, want := stdout.String(), "partner-api 10 1000 2\nrate_limited\npartner-api 1\nno_poller\n"; got != want {
		t.Fatalf("example printed %q, want %q", got, want)
	}
}

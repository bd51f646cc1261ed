package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// getHealth fetches GET /health from the worker and decodes it.
func getHealth(t *testing.T, addr string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("health body: %v", err)
	}
	return resp.StatusCode, body
}

// TestHealthEndpoint_P_TEL_5: 200 with the fields while the worker runs; 503 unhealthy
// once polls and heartbeats fail for 3 intervals; 503 stopping once a shutdown begins.
func TestHealthEndpoint_P_TEL_5(t *testing.T) {
	t.Parallel()
	// Heartbeat interval 300 ms; the worker is not declared dead during the simulated
	// outage below (3 s by default: a loaded machine took that long, and the reaper then
	// reclaimed the held task, so in_flight dropped to 0 and Stop returned at once).
	s := startServer(t, "--dead-after-ms", "60000")
	c := newClient(t, s, nil)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	// A lease far longer than the outage below, so the held task is not reaped and claimed
	// a second time while the server is down (that would make in_flight 2).
	w := startWorker(t, c, orch8.WorkerOptions{HealthAddr: "127.0.0.1:0", Concurrency: 3, PollWait: 200 * time.Millisecond,
		LeaseDuration: time.Minute},
		map[string]orch8.Handler{"hold": func(ctx context.Context, task *orch8.Task) (any, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		}})
	var addr string
	waitFor(t, 10*time.Second, "the health endpoint", func() bool { addr = w.HealthAddr(); return addr != "" })

	enqueue(t, c, orch8.NewTask{HandlerName: "hold"})
	<-started
	var body map[string]any
	waitFor(t, 10*time.Second, "a poll and a heartbeat in the report", func() bool {
		var code int
		code, body = getHealth(t, addr)
		if code != http.StatusOK || body["status"] != "ok" {
			t.Fatalf("running worker: %d %v", code, body)
		}
		return body["last_poll_at"] != nil && body["last_heartbeat_at"] != nil
	})
	if body["worker_id"] != w.ID() || body["in_flight"] != float64(1) || body["free_slots"] != float64(2) {
		t.Errorf("health body %v, want worker_id %s, in_flight 1, free_slots 2", body, w.ID())
	}
	for _, k := range []string{"last_poll_at", "last_heartbeat_at"} {
		if _, err := time.Parse(time.RFC3339, body[k].(string)); err != nil {
			t.Errorf("%s = %v is not RFC 3339: %v", k, body[k], err)
		}
	}

	// No successful poll or heartbeat for 3 intervals (900 ms): unhealthy.
	s.stop()
	waitFor(t, 10*time.Second, "503 unhealthy", func() bool {
		code, b := getHealth(t, addr)
		return code == http.StatusServiceUnavailable && b["status"] == "unhealthy"
	})
	s.start()
	waitFor(t, 10*time.Second, "200 again", func() bool {
		code, _ := getHealth(t, addr)
		return code == http.StatusOK
	})

	// A shutdown begins while the handler still runs: 503 stopping, served until Run returns.
	w.Stop()
	waitFor(t, 10*time.Second, "503 stopping", func() bool {
		code, b := getHealth(t, addr)
		return code == http.StatusServiceUnavailable && b["status"] == "stopping" && b["in_flight"] == float64(1)
	})
	close(release)
	waitFor(t, 30*time.Second, "the endpoint to close with Run", func() bool { return w.HealthAddr() == "" })
	if _, err := http.Get("http://" + addr + "/health"); err == nil {
		t.Errorf("GET /health still answers after Run returned")
	}
}

// TestHealthEndpointOffByDefault_P_TEL_5: without HealthAddr nothing is served.
func TestHealthEndpointOffByDefault_P_TEL_5(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := newClient(t, s, nil)
	w := startWorker(t, c, orch8.WorkerOptions{PollWait: 200 * time.Millisecond},
		map[string]orch8.Handler{"noop": func(ctx context.Context, task *orch8.Task) (any, error) { return nil, nil }})
	id := enqueue(t, c, orch8.NewTask{HandlerName: "noop"})
	waitStatus(t, c, id, orch8.StatusCompleted, 10*time.Second)
	if addr := w.HealthAddr(); addr != "" {
		t.Fatalf("HealthAddr %q without the option", addr)
	}
	if _, err := orch8.NewWorker(c, orch8.WorkerOptions{HealthAddr: "8080"}); !errors.Is(err, orch8.ErrInvalidOptions) {
		t.Fatalf("HealthAddr without a port: %v, want ErrInvalidOptions", err)
	}
}

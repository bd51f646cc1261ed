package orch8

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

// A client built without an HTTPClient keeps a connection for each request it ran at once:
// http.DefaultTransport keeps 2 idle per host, so rounds of 10 concurrent calls dialed 8
// new connections each round after the first.
func TestDefaultClientReusesItsConcurrentConnections(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"w","status":"active"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := NewClient(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	const rounds, concurrent = 3, 10
	for round := 0; round < rounds; round++ {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < concurrent; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := c.GetWorker(context.Background(), "w"); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	// 10 for the first round; a connection handed back a moment after its answer may be
	// dialed again once. Without the pool: 10 + 8 + 8.
	if got := dials.Load(); got > concurrent+2 {
		t.Fatalf("%d connections for %d rounds of %d concurrent calls, want at most %d", got, rounds, concurrent, concurrent+2)
	}
}

// A program that replaced http.DefaultTransport (a proxy, instrumentation) keeps it.
func TestDefaultClientKeepsAReplacedDefaultTransport(t *testing.T) {
	if pooledTransport() == nil {
		t.Fatal("the pooled transport is not used with the standard DefaultTransport")
	}
	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	http.DefaultTransport = roundTripFunc(func(r *http.Request) (*http.Response, error) { return saved.RoundTrip(r) })
	c, err := NewClient(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.HTTPClient.Transport != nil {
		t.Fatalf("transport %T, want nil (http.DefaultTransport at request time)", c.cfg.HTTPClient.Transport)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

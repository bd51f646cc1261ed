// Package refserver starts the real reference server on loopback: orch8-server from the
// repo's .venv for the SDK's integration tests (Start), or any server command for
// orch8test.StartServer (Launch).
package refserver

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is one real reference server on loopback with its own SQLite file. This is
// the Go SDK's one server launcher (issue 19), shared by the integration tests of the
// core module and of orch8otel: it starts `orch8-server --port 0` and reads
// the `orch8-server listening on http://HOST:PORT` line; nothing here looks for a port.
type Server struct {
	t       testing.TB
	command []string // the program and its own leading arguments
	args    []string
	env     []string // nil: this process's environment
	URL     string
	log     *os.File
	cmd     *exec.Cmd
}

// Options of Launch.
type Options struct {
	// Command starts the server, e.g. {"orch8-server"} or {"python", "-m", "orch8_server"}.
	Command []string
	// Args follow the command; Launch adds --port.
	Args []string
	// Env of the server; this process's environment when nil.
	Env []string
}

// serverBinary locates the reference server in the repo root's .venv (sdk-go's parent).
func serverBinary(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0) // sdk-go/internal/refserver/refserver.go
	bin := filepath.Join(filepath.Dir(file), "..", "..", "..", ".venv", "bin", "orch8-server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("reference server not found at %s: run `make setup` at the repo root", bin)
	}
	return bin
}

// Start starts a server with fast test settings; extra flags override them. It stops
// with the test.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	args := []string{"--db", filepath.Join(t.TempDir(), "orch8.db"), "--host", "127.0.0.1",
		"--lease-ms", "2000", "--reaper-interval-ms", "100", "--heartbeat-interval-ms", "300", "--dead-after-ms", "3000"}
	return Launch(t, Options{Command: []string{serverBinary(t)}, Args: append(args, extra...)})
}

// Launch starts o.Command with o.Args on --port 0 and returns once it listens; its stderr
// goes to a log printed when the test fails. It stops with the test.
func Launch(t testing.TB, o Options) *Server {
	t.Helper()
	logf, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, command: o.Command, args: o.Args, env: o.Env, log: logf}
	s.Start()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			raw, _ := os.ReadFile(logf.Name())
			t.Logf("server log:\n%s", Tail(string(raw), 4000))
		}
		logf.Close()
	})
	return s
}

// Tail is the last n bytes of s, for logs printed when a test fails.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var listeningLine = regexp.MustCompile(`^orch8-server listening on (http://\S+)$`)

// Start runs the server on --port 0 the first time; a restart asks for the port it bound
// before, so clients keep their URL.
func (s *Server) Start() {
	s.t.Helper()
	port := "0"
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil {
			s.t.Fatal(err)
		}
		port = u.Port()
	}
	args := append(append(append([]string(nil), s.command[1:]...), s.args...), "--port", port)
	s.cmd = exec.Command(s.command[0], args...)
	s.cmd.Env = s.env
	s.cmd.Stderr = s.log
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("cannot start %s: %v", strings.Join(s.command, " "), err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
			fmt.Fprintln(s.log, sc.Text())
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			raw, _ := os.ReadFile(s.log.Name())
			s.t.Fatalf("orch8-server exited without its listening line:\n%s", Tail(string(raw), 2000))
		}
		s.URL = u
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Fatal("orch8-server printed no listening line within 30 s")
	}
}

// Signal sends sig to the running server, e.g. SIGHUP to re-read its keys file (P-AUTH-4).
func (s *Server) Signal(sig os.Signal) {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process == nil {
		s.t.Fatal("refserver: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// Stop sends SIGTERM and waits for the process to exit.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

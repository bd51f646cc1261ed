package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
	"github.com/orch8/orch8-workers/sdk-go/internal/refserver"
)

const sdkModule = "github.com/orch8/orch8-workers/sdk-go"

// runtimeModules is everything a consumer's module graph may hold besides itself: the SDK
// and its runtime dependencies (none), never the code generators (issue 14).
var runtimeModules = []string{sdkModule}

// readmeBlock returns the fenced code block that follows `<!-- consumer-test: NAME -->`
// (or `<!-- readme-test: NAME -->`).
func readmeBlock(t *testing.T, path, name string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- (?:consumer|readme)-test: " + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```")
	m := re.FindSubmatch(raw)
	if m == nil {
		t.Fatalf("%s has no block marked <!-- consumer-test: %s --> or <!-- readme-test: %s -->", path, name, name)
	}
	return string(m[1])
}

// goDirective is the go line of the SDK's go.mod, e.g. "1.24.0".
func goDirective(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("no go directive in go.mod")
	}
	return string(m[1])
}

// TestConsumerRunsReadmeWorker installs the SDK as a user does before publication (the
// GOPROXY directory of `make dist`, as the README says) into a fresh module outside the
// repo, checks its module graph, and runs the README's worker, extracted from the README,
// until it completes real tasks: on the go directive's toolchain and on the current one.
func TestConsumerRunsReadmeWorker(t *testing.T) {
	t.Parallel()
	src := readmeBlock(t, "../README.md", "worker")
	example, err := os.ReadFile("../examples/worker/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(example) != src {
		t.Fatal("examples/worker/main.go differs from the README's worker block; keep them identical")
	}
	repo, _ := filepath.Abs("../..")
	proxy := filepath.Join(t.TempDir(), "goproxy")
	mk := exec.Command("go", "run", "./cmd/mkproxy", "-module", "..", "-out", proxy)
	mk.Dir = "../tools"
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	hostCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, toolchain := range []string{"go" + goDirective(t), "local"} {
		t.Run(toolchain, func(t *testing.T) {
			dir := t.TempDir()
			if strings.HasPrefix(dir, repo+string(filepath.Separator)) {
				t.Fatalf("consumer module %s is inside the repo", dir)
			}
			mod := filepath.Join(dir, "consumer")
			if err := os.Mkdir(mod, 0o755); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(),
				"GOTOOLCHAIN="+toolchain, "GOWORK=off", "GOFLAGS=-modcacherw -buildvcs=false",
				// A fresh module cache, so no earlier build of v0.1.0 is reused; the host's
				// cache serves as a read-only proxy for the toolchain and the dependencies.
				"GOMODCACHE="+filepath.Join(dir, "modcache"),
				"GOPROXY=file://"+proxy+",file://"+strings.TrimSpace(string(hostCache))+"/cache/download,https://proxy.golang.org",
				"GONOSUMDB=github.com/orch8/orch8-workers")
			goCmd := func(args ...string) string {
				t.Helper()
				cmd := exec.Command("go", args...)
				cmd.Dir, cmd.Env = mod, env
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}
			v := goCmd("version")
			if toolchain != "local" && !strings.Contains(v, toolchain+" ") {
				t.Fatalf("go version says %q, want %s", v, toolchain)
			}
			t.Logf("consumer module %s, %s", mod, strings.TrimSpace(v))
			goCmd("mod", "init", "example.com/consumer")
			if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			goCmd("get", sdkModule+"@v"+orch8.Version)
			goCmd("mod", "tidy")
			var graph []string
			for _, line := range strings.Split(strings.TrimSpace(goCmd("list", "-m", "all")), "\n") {
				if f := strings.Fields(line); f[0] != "example.com/consumer" {
					graph = append(graph, f[0])
				}
			}
			sort.Strings(graph)
			t.Logf("go list -m all: example.com/consumer + %v", graph)
			if fmt.Sprint(graph) != fmt.Sprint(runtimeModules) {
				t.Fatalf("go list -m all holds %v, want only the runtime modules %v", graph, runtimeModules)
			}
			goCmd("build", "-o", "worker", ".")
			runConsumerWorker(t, filepath.Join(mod, "worker"))
		})
	}
}

// runConsumerWorker runs the built README worker against a live server until it completes
// tasks, then stops it with SIGTERM and expects a clean exit.
func runConsumerWorker(t *testing.T, bin string) {
	s := startServer(t)
	c := newClient(t, s, nil)
	logs := &refserver.LogBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ORCH8_URL="+s.URL)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("worker output:\n%s", tail(logs.String(), 4000))
		}
	}()
	texts := []string{"hello", "orch8", "", "a longer text with spaces"}
	ids := make([]string, len(texts))
	for i, text := range texts {
		ids[i] = enqueue(t, c, orch8.NewTask{HandlerName: "sha256", Params: orch8.JSONObject{"text": text}})
	}
	bad := enqueue(t, c, orch8.NewTask{HandlerName: "sha256", Params: orch8.JSONObject{"text": 42}})
	for i, id := range ids {
		rec := waitStatus(t, c, id, orch8.StatusCompleted, 60*time.Second)
		sum := sha256.Sum256([]byte(texts[i]))
		if out, _ := rec.Output.(map[string]any); out["sha256"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("task %s output %v", id, rec.Output)
		}
	}
	if rec := waitStatus(t, c, bad, orch8.StatusFailed, 30*time.Second); rec.Error == nil || rec.Error.Code != orch8.CodePermanentError {
		t.Fatalf("bad input: %+v", rec.Error)
	}
	t.Logf("README worker completed %d tasks and failed the bad input permanently", len(ids))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("worker exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not exit within 30 s of SIGTERM")
	}
	workers, err := c.ListWorkers(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workers.Workers {
		if w.State != "deregistered" && w.State != "dead" {
			t.Fatalf("worker %s still %s after exit", w.WorkerID, w.State)
		}
	}
}

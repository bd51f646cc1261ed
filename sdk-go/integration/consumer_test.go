package integration_test

import (
	"cmp"
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

// readmeBlock is one fenced block of a README and its marker: `<!-- consumer-test: NAME -->`
// (a program, built as NAME/main.go and run by the consumer test) or
// `<!-- not-runnable: why -->` (skipped, with the README's reason).
type readmeBlock struct {
	line             int
	lang, code       string
	name, notRunning string
}

var (
	fence  = regexp.MustCompile("^```(\\S*)$")
	marker = regexp.MustCompile(`^<!-- (consumer-test|not-runnable): (.+?) -->$`)
)

// readmeBlocks returns every fenced block of the README at path; a block with neither
// marker fails the test, so a new example cannot go untested by accident (issue 32).
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var blocks []readmeBlock
	var unmarked []int
	for i := 0; i < len(lines); i++ {
		open := fence.FindStringSubmatch(lines[i])
		if open == nil {
			continue
		}
		end := i + 1
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Fatalf("%s:%d: the code block is never closed", path, i+1)
		}
		before := i - 1
		for before >= 0 && strings.TrimSpace(lines[before]) == "" {
			before--
		}
		b := readmeBlock{line: i + 1, lang: cmp.Or(open[1], "text"), code: strings.Join(lines[i+1:end], "\n") + "\n"}
		switch m := marker.FindStringSubmatch(lines[max(before, 0)]); {
		case before < 0 || m == nil:
			unmarked = append(unmarked, i+1)
		case m[1] == "consumer-test":
			b.name = m[2]
			blocks = append(blocks, b)
		default:
			b.notRunning = m[2]
			blocks = append(blocks, b)
		}
		i = end
	}
	if len(unmarked) > 0 {
		t.Fatalf("%s: the blocks at line %v have neither <!-- consumer-test: NAME --> nor <!-- not-runnable: why --> before them", path, unmarked)
	}
	return blocks
}

// readmePrograms runs each README program (`<!-- consumer-test: NAME -->`), built as bin,
// against a server of its own and checks what it did.
var readmePrograms = map[string]func(t *testing.T, bin string){
	"worker":        runConsumerWorker,
	"keys":          runKeysExample,
	"instance-keys": runInstanceKeysExample,
	"queues":        runQueuesExample,
	"rates":         runRatesExample,
	"tenants":       runTenantsExample,
	"workflow":      runWorkflowExample,
}

// runnableBlocks is the README's programs by name, checked against readmePrograms.
func runnableBlocks(t *testing.T) map[string]string {
	t.Helper()
	programs := map[string]string{}
	for _, b := range readmeBlocks(t, "../README.md") {
		if b.name == "" {
			continue
		}
		if _, dup := programs[b.name]; dup || b.lang != "go" {
			t.Fatalf("README.md:%d: consumer-test %q is repeated or not a go block", b.line, b.name)
		}
		programs[b.name] = b.code
	}
	for name := range programs {
		if _, isTest := testPackage(name); !isTest && readmePrograms[name] == nil {
			t.Errorf("README program %q has no entry in readmePrograms", name)
		}
	}
	for name := range readmePrograms {
		if _, ok := programs[name]; !ok {
			t.Errorf("readmePrograms[%q] is no README block", name)
		}
	}
	return programs
}

// testPackage says whether a README block named NAME_test is a test file (the handler unit
// tests of P-KIT, the workflow tests of P-CLOCK), saved as NAME/NAME_test.go and run by
// `go test`, and returns NAME.
func testPackage(name string) (string, bool) {
	return strings.CutSuffix(name, "_test")
}

// TestReadmeBlocksAreRunOrMarked lists each not-runnable block as a skipped subtest with
// the README's reason (go test -v shows them), after checking every other block is run.
func TestReadmeBlocksAreRunOrMarked(t *testing.T) {
	t.Parallel()
	runnableBlocks(t)
	for _, b := range readmeBlocks(t, "../README.md") {
		if b.notRunning != "" {
			t.Run(fmt.Sprintf("README.md:%d_%s", b.line, b.lang), func(t *testing.T) { t.Skip(b.notRunning) })
		}
	}
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

// TestConsumerRunsReadmePrograms installs the SDK as a user does before publication (the
// GOPROXY directory of `make dist`, as the README says) into a fresh module outside the
// repo, checks its module graph, builds every README program there (NAME/main.go) and runs
// each against a live server: on the go directive's toolchain and on the current one.
func TestConsumerRunsReadmePrograms(t *testing.T) {
	t.Parallel()
	programs := runnableBlocks(t)
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
				"GONOSUMDB=github.com/orch8/orch8-workers",
				// Workflow tests (orch8test.StartServer) start the monorepo's server, given as a
				// user would give theirs.
				"ORCH8_SERVER="+filepath.Join(repo, ".venv", "bin", "orch8-server"))
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
			for name, src := range programs {
				dir, file := name, "main.go"
				if pkg, isTest := testPackage(name); isTest {
					dir, file = pkg, name+".go"
				}
				if err := os.MkdirAll(filepath.Join(mod, dir), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(mod, dir, file), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
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
			goCmd("build", "-o", "bin"+string(filepath.Separator), "./...")
			for name := range programs {
				if pkg, isTest := testPackage(name); isTest {
					// Nothing is started for a test block: the handler unit tests need no server and
					// the workflow tests start their own (ORCH8_SERVER). Each test of the block passes.
					out := goCmd("test", "-count=1", "-v", "./"+pkg)
					if want := strings.Count(programs[name], "\nfunc Test"); want == 0 || strings.Count(out, "--- PASS") != want {
						t.Fatalf("go test ./%s: want %d passing tests:\n%s", pkg, want, out)
					}
					t.Logf("go test ./%s: %s", pkg, strings.Join(regexp.MustCompile(`--- PASS: \S+ \([^)]*\)`).FindAllString(out, -1), ", "))
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					readmePrograms[name](t, filepath.Join(mod, "bin", name))
				})
			}
		})
	}
}

// runConsumerWorker runs the README's worker against a live server until it completes
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

// Command mkproxy builds the SDK as a consumer sees it: a GOPROXY directory (usable as
// GOPROXY=file:///...) holding the module zip, .mod, .info and the version list, in the
// layout `go mod download` fetches from a proxy. The zip holds what a release tag would:
// the module's files without build outputs (dist/, bin/) or the nested tools module.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// file is one module file for zip.Create.
type file struct{ rel, abs string }

func (f file) Path() string                 { return f.rel }
func (f file) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

var versionConst = regexp.MustCompile(`(?m)^const Version = "([^"]+)"`)

func main() {
	dir := flag.String("module", "..", "the module's directory")
	out := flag.String("out", "../dist/goproxy", "the GOPROXY directory to write")
	flag.Parse()
	if err := run(*dir, *out); err != nil {
		log.Fatalf("mkproxy: %v", err)
	}
}

func run(dir, out string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	modPath := modfile.ModulePath(gomod)
	// The release version is the SDK's Version constant (the user agent's), so they agree.
	cfg, err := os.ReadFile(filepath.Join(dir, "config.go"))
	if err != nil {
		return err
	}
	m := versionConst.FindSubmatch(cfg)
	if m == nil {
		return fmt.Errorf("no `const Version = \"...\"` in config.go")
	}
	mv := module.Version{Path: modPath, Version: "v" + string(m[1])}

	var files []zip.File
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || rel == "dist" || rel == "bin" || rel == "tools") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != dir && err == nil {
				return filepath.SkipDir // a module of its own (orch8otel), never part of this one
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || !d.Type().IsRegular() || rel == "examples/worker/worker" {
			return nil
		}
		files = append(files, file{rel: rel, abs: p})
		return nil
	})
	if err != nil {
		return err
	}

	esc, err := module.EscapePath(modPath)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.RemoveAll(vdir); err != nil {
		return err
	}
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	zf, err := os.Create(filepath.Join(vdir, mv.Version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(zf, mv, files); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]any{"Version": mv.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, data := range map[string][]byte{
		mv.Version + ".mod":  gomod,
		mv.Version + ".info": info,
		"list":               []byte(mv.Version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("dist: %s@%s (%d files) in %s\n", mv.Path, mv.Version, len(files), out)
	return nil
}

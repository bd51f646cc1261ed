package orch8test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// ORCH8_SERVER is split into a command as Python's shlex.split does, in every SDK: the
// cases are shared (conformance/shell-words-cases.json) with sdk-python and sdk-typescript.
func TestShellWordsSplitsOrch8ServerAsShlexDoes(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "conformance", "shell-words-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []struct {
			Value string   `json:"value"`
			Words []string `json:"words"`
			Error bool     `json:"error"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	for _, c := range table.Cases {
		words, err := shellWords(c.Value)
		if c.Error {
			if err == nil || !strings.Contains(err.Error(), "unclosed") {
				t.Errorf("%q: want an unclosed-quote error, got %q, %v", c.Value, words, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(words, c.Words) {
			t.Errorf("%q: got %q, %v; want %q", c.Value, words, err, c.Words)
		}
	}
}

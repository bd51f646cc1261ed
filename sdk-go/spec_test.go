package orch8

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// The generated constants must name the openapi.yaml next to this module.
func TestSpecHashMatchesContract(t *testing.T) {
	raw, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != SpecSHA256 {
		t.Fatalf("SpecSHA256 %s, openapi.yaml hashes to %s: run make generate", SpecSHA256, got)
	}
	if SpecVersion == "" {
		t.Fatal("SpecVersion is empty")
	}
}

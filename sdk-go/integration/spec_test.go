package integration_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// The generated constants must name the openapi.yaml of this repository. It lives here, not
// beside the package, so that `go test all` in a consumer's module (which has no
// openapi.yaml) does not run it.
func TestSpecHashMatchesContract(t *testing.T) {
	raw, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != orch8.SpecSHA256 {
		t.Fatalf("SpecSHA256 %s, openapi.yaml hashes to %s: run make generate", orch8.SpecSHA256, got)
	}
	if orch8.SpecVersion == "" {
		t.Fatal("SpecVersion is empty")
	}
}

package orch8

// The low-level client in api/ is generated from the contract; see oapi-codegen.yaml.
// `make generate` runs these; `make check-generated` runs them in a scratch copy and diffs.
//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../openapi.yaml
//go:generate go run ./internal/cmd/genspec -spec ../openapi.yaml -out api/spec.gen.go

package orch8

// The low-level client in api/ and the typed methods in client_gen.go are generated from
// the contract. The generators live in tools/, a module of their own, so a consumer's
// module graph holds only the SDK's runtime dependencies (issue 14).
// `make generate` runs these; `make check-generated` runs them in a scratch copy and diffs.
//go:generate go -C tools tool oapi-codegen -config ../oapi-codegen.yaml ../../openapi.yaml
//go:generate go -C tools run ./cmd/genspec -spec ../../openapi.yaml -out ../api/spec.gen.go
//go:generate go -C tools run ./cmd/gencalls -facts ../../openapi.sdk.json -api ../api/api.gen.go -out ../client_gen.go

module orch8bench/goworker

go 1.25.0

require github.com/orch8/orch8-workers/sdk-go v0.0.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/oapi-codegen/runtime v1.8.0 // indirect
)

replace github.com/orch8/orch8-workers/sdk-go => ../../../sdk-go

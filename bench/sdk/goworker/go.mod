module orch8bench/goworker

go 1.25.0

require github.com/orch8/orch8-workers/sdk-go v0.0.0

replace github.com/orch8/orch8-workers/sdk-go => ../../../sdk-go

module github.com/orch8/orch8-workers/sdk-go

go 1.22.0

module orch8bench/loadgen

go 1.24

//go:build orch8before

package main

import (
	"log"
	"os"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

// config of the SDK before issue 18: it has no Telemetry field.
func config(url string) orch8.Config {
	if os.Getenv("ORCH8_TELEMETRY") == "1" {
		log.Fatal("ORCH8_TELEMETRY=1: the SDK before issue 18 has no telemetry")
	}
	return orch8.Config{BaseURL: url}
}

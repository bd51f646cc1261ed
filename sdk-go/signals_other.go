//go:build !unix

package orch8

import (
	"context"
	"os"
	"os/signal"
)

// RunWithSignals is Run plus interrupt handling: the first interrupt shuts down gracefully
// (P-SDK-7), a second one ends the grace period at once (P-SDK-17). Quiet and resume by
// signal need a Unix system; elsewhere call Quiet and Resume.
func (w *Worker) RunWithSignals(ctx context.Context) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for stops := 1; ; stops++ {
			select {
			case <-sigs:
				w.onStopSignal("SIGINT", stops) // os.Interrupt: Ctrl+C
			case <-done:
				return
			}
		}
	}()
	return w.Run(ctx)
}

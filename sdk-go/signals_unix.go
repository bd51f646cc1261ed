//go:build unix

package orch8

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// RunWithSignals is Run plus the process signals of section 14: SIGTERM and SIGINT shut
// down gracefully (P-SDK-7) and a second one ends the grace period at once (P-SDK-17);
// SIGTSTP quiets the worker and SIGCONT resumes it (P-SDK-8, P-SDK-18).
func (w *Worker) RunWithSignals(ctx context.Context) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go w.watchSignals(sigs, done)
	return w.Run(ctx)
}

func (w *Worker) watchSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	stops := 0
	for {
		select {
		case s := <-sigs:
			switch s {
			case syscall.SIGTSTP:
				w.Quiet()
			case syscall.SIGCONT:
				w.Resume()
			default:
				stops++
				w.onStopSignal(signalName(s), stops)
			}
		case <-done:
			return
		}
	}
}

// signalName is the name the logs and the shutdown message use (P-SDK-29); os.Signal's
// own String says "terminated" and "interrupt".
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}

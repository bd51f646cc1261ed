//go:build unix

package orch8

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// RunWithSignals is Run plus the process signals of section 14: SIGTERM and SIGINT shut
// down gracefully (P-SDK-7), SIGTSTP quiets the worker and SIGCONT resumes it (P-SDK-8).
func (w *Worker) RunWithSignals(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	pause := make(chan os.Signal, 2)
	signal.Notify(pause, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(pause)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-pause:
				if s == syscall.SIGTSTP {
					w.Quiet()
				} else {
					w.Resume()
				}
			case <-done:
				return
			}
		}
	}()
	return w.Run(ctx)
}

//go:build !unix

package orch8

import (
	"context"
	"os"
	"os/signal"
)

// RunWithSignals is Run plus interrupt handling (P-SDK-7); quiet/resume by signal needs a
// Unix system, elsewhere call Quiet and Resume.
func (w *Worker) RunWithSignals(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	return w.Run(ctx)
}

// Command tenants runs a worker of handler "resize" in tenant "acme" with the key in
// ORCH8_API_KEY: it says who the key is, and keeps running while the key is refused.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"

	orch8 "github.com/orch8/orch8-workers/sdk-go"
)

func main() {
	// Every request, the worker's included, carries X-Tenant-Id: acme (or ORCH8_TENANT's
	// value when Tenant is empty). A tenant not matching ^[A-Za-z0-9_.-]{1,64}$ is refused here.
	client, err := orch8.NewClient(orch8.Config{Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	me, err := client.Whoami(ctx)
	if err != nil {
		// errors.Is(err, orch8.ErrUnauthorized): the server does not know this key (401);
		// errors.Is(err, orch8.ErrForbidden): the key may not act in tenant acme (403).
		log.Fatal(err)
	}
	log.Printf("role %s in tenant %s, queues %v", me.Role, me.Tenant, me.Queues)
	if _, err := client.ListWorkers(ctx, nil); errors.Is(err, orch8.ErrForbidden) {
		log.Print("this key may not list workers (403 forbidden, never retried)")
	}

	worker, err := orch8.NewWorker(client, orch8.WorkerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	worker.Handle("resize", func(ctx context.Context, t *orch8.Task) (any, error) {
		return map[string]any{"tenant": client.Tenant()}, nil
	})
	// A registration or poll refused with 401/403 is logged at warn and tried again with
	// backoff: a key fixed on the server (keys file + SIGHUP) is picked up without a restart.
	if err := worker.Run(ctx); err != nil {
		log.Fatal(err)
	}
}

package orch8

import (
	"context"
	"net/http"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// Worker registration, heartbeats, operator directives, queues and server info.

// RegisterWorker registers (or re-registers) a worker (P-WORKER-1); idempotent, so retried.
func (c *Client) RegisterWorker(ctx context.Context, body WorkerRegistration) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "registerWorker", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.RegisterWorker(ctx, body) },
		parseWorker("registerWorker", api.ParseRegisterWorkerResponse, func(p *api.RegisterWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// HeartbeatWorker sends the batched worker heartbeat (P-WORKER-2, P-WORKER-3).
func (c *Client) HeartbeatWorker(ctx context.Context, workerID string, body WorkerHeartbeat) (*WorkerHeartbeatResult, error) {
	return invoke(ctx, c, call{op: "heartbeatWorker", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.HeartbeatWorker(ctx, workerID, body) },
		func(r *http.Response) (*WorkerHeartbeatResult, error) {
			p, err := api.ParseHeartbeatWorkerResponse(r)
			if err != nil {
				return nil, err
			}
			return first("heartbeatWorker", r, p.JSON200)
		})
}

// DeregisterWorker removes a worker; the server reclaims what it held (P-WORKER-5).
func (c *Client) DeregisterWorker(ctx context.Context, workerID string) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "deregisterWorker", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.DeregisterWorker(ctx, workerID) },
		parseWorker("deregisterWorker", api.ParseDeregisterWorkerResponse, func(p *api.DeregisterWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// ListWorkers lists workers, most recently seen first; params may be nil.
func (c *Client) ListWorkers(ctx context.Context, params *ListWorkersParams) (*WorkerList, error) {
	return invoke(ctx, c, call{op: "listWorkers", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.ListWorkers(ctx, params) },
		func(r *http.Response) (*WorkerList, error) {
			p, err := api.ParseListWorkersResponse(r)
			if err != nil {
				return nil, err
			}
			return first("listWorkers", r, p.JSON200)
		})
}

// GetWorker reads one worker.
func (c *Client) GetWorker(ctx context.Context, workerID string) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "getWorker", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.GetWorker(ctx, workerID) },
		parseWorker("getWorker", api.ParseGetWorkerResponse, func(p *api.GetWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// QuietWorker sets the quiet directive (P-WORKER-4); not in P-SDK-2's retry list.
func (c *Client) QuietWorker(ctx context.Context, workerID string) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "quietWorker"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.QuietWorker(ctx, workerID) },
		parseWorker("quietWorker", api.ParseQuietWorkerResponse, func(p *api.QuietWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// ResumeWorker sets the running directive again (P-WORKER-4).
func (c *Client) ResumeWorker(ctx context.Context, workerID string) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "resumeWorker"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.ResumeWorker(ctx, workerID) },
		parseWorker("resumeWorker", api.ParseResumeWorkerResponse, func(p *api.ResumeWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// TerminateWorker sets the terminate directive (P-WORKER-4).
func (c *Client) TerminateWorker(ctx context.Context, workerID string) (*WorkerRecord, error) {
	return invoke(ctx, c, call{op: "terminateWorker"},
		func(ctx context.Context) (*http.Response, error) { return c.raw.TerminateWorker(ctx, workerID) },
		parseWorker("terminateWorker", api.ParseTerminateWorkerResponse, func(p *api.TerminateWorkerResponse) *WorkerRecord { return p.JSON200 }))
}

// QueueStats reads depth and pollers per queue and handler (P-OBS-1); params may be nil.
func (c *Client) QueueStats(ctx context.Context, params *QueueStatsParams) (*QueueStatsList, error) {
	return invoke(ctx, c, call{op: "getQueueStats", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.GetQueueStats(ctx, params) },
		func(r *http.Response) (*QueueStatsList, error) {
			p, err := api.ParseGetQueueStatsResponse(r)
			if err != nil {
				return nil, err
			}
			return first("getQueueStats", r, p.JSON200)
		})
}

// ServerInfo reads the server's build, contract version and defaults.
func (c *Client) ServerInfo(ctx context.Context) (*ServerInfo, error) {
	return invoke(ctx, c, call{op: "getServerInfo", safe: true},
		func(ctx context.Context) (*http.Response, error) { return c.raw.GetServerInfo(ctx) },
		func(r *http.Response) (*ServerInfo, error) {
			p, err := api.ParseGetServerInfoResponse(r)
			if err != nil {
				return nil, err
			}
			return first("getServerInfo", r, p.JSON200)
		})
}

// parseWorker adapts a generated parser whose 200 body is a Worker.
func parseWorker[P any](op string, parse func(*http.Response) (*P, error), body func(*P) *WorkerRecord) func(*http.Response) (*WorkerRecord, error) {
	return func(r *http.Response) (*WorkerRecord, error) {
		p, err := parse(r)
		if err != nil {
			return nil, err
		}
		return first(op, r, body(p))
	}
}

package orch8

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// tenantID is the form of a tenant id (P-TEN-2).
var tenantID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Version is this SDK's version; the user agent is "orch8-go/<Version>" (P-SDK-1).
const Version = "0.1.0"

// DefaultBaseURL is used when neither Config.BaseURL nor ORCH8_URL is set (P-SDK-1).
const DefaultBaseURL = api.DefaultBaseURL

// Defaults of section 14; every SDK uses the same numbers, generated from openapi.yaml
// (x-orch8-constants and the schema numbers it names; package api).
const (
	DefaultTimeout      = api.RequestTimeoutMs * time.Millisecond           // P-SDK-1 request timeout
	LongPollSlack       = api.LongPollMarginMs * time.Millisecond           // P-SDK-1 long-poll timeout = wait_ms + this
	DefaultMaxRetries   = api.ClientMaxRetries                              // P-SDK-2
	DefaultRetryBase    = api.ClientRetryBaseMs * time.Millisecond          // P-SDK-2
	DefaultRetryCap     = api.ClientRetryCapMs * time.Millisecond           // P-SDK-2
	DefaultPollWait     = api.DefaultPollWaitMs * time.Millisecond          // P-POLL-2, P-SDK-3: the long-poll wait_ms
	DefaultConcurrency  = api.DefaultConcurrency                            // P-SDK-3
	DefaultGracePeriod  = api.DefaultGracePeriodMs * time.Millisecond       // P-SDK-7
	DefaultHeartbeat    = api.DefaultHeartbeatIntervalMs * time.Millisecond // P-SDK-4, until the server says otherwise
	DefaultOutageBase   = api.OutageBackoffBaseMs * time.Millisecond        // P-SDK-9
	DefaultOutageCap    = api.OutageBackoffCapMs * time.Millisecond         // P-SDK-9
	CodeUnhandledError  = "unhandled_error"                                 // P-SDK-6
	CodeRetryableError  = "retryable_error"                                 // P-SDK-6
	CodePermanentError  = "permanent_error"                                 // P-SDK-6
	CodeShutdown        = "shutdown"                                        // P-SDK-7
	CodeNoHandler       = "no_handler"                                      // P-SDK-14
	CodeInvalidOutput   = "invalid_output"                                  // P-SDK-15
	CodeOutputRejected  = "output_rejected"                                 // P-SDK-15
	MaxPollBatchSize    = api.MaxPollBatchSize                              // P-SDK-13: most tasks one poll asks for
	MaxPollHandlers     = api.MaxPollHandlers                               // P-SDK-13: most handler names in one poll
	headerAuthorization = "Authorization"
	headerTenant        = "X-Tenant-Id" // P-SDK-24
)

// Config configures a Client. Zero values take the defaults of docs/protocol.md section 14.
type Config struct {
	// BaseURL of the server; ORCH8_URL, then http://localhost:3001 when empty.
	BaseURL string
	// APIKey sent as a bearer token; ORCH8_API_KEY when empty (P-AUTH-1).
	APIKey string
	// Tenant is sent as X-Tenant-Id on every request, the worker's included; ORCH8_TENANT
	// when empty; no header at all when both are empty (P-SDK-24, P-TEN-2). It must match
	// ^[A-Za-z0-9_.-]{1,64}$ or NewClient refuses it.
	Tenant string
	// HTTPClient performs the requests; when nil, an http.Client on a transport shared by
	// the package's clients that keeps up to 100 idle connections per host (see
	// pooledTransport), or on http.DefaultTransport if the program replaced it. Its own Timeout
	// should be zero (or above every long-poll) because the SDK sets per-call deadlines.
	HTTPClient *http.Client
	// Timeout of one request (10 s when zero); long-polls get wait_ms + 10 s (P-SDK-1).
	Timeout time.Duration
	// MaxRetries of a safe call (P-SDK-2): 3 when zero, none when negative.
	MaxRetries int
	// UserAgent overrides "orch8-go/<Version>".
	UserAgent string
	// Telemetry traces Enqueue and EnqueueBatch (P-TEL-1), e.g. orch8otel.New(); none when
	// nil. A Worker built on this client uses it too unless WorkerOptions.Telemetry is set.
	Telemetry Telemetry
}

// stdTransport is http.DefaultTransport as the program started with it.
var stdTransport = http.DefaultTransport

// pooled is stdTransport's clone with room for the requests a worker runs at once.
var pooled = func() http.RoundTripper {
	t, ok := stdTransport.(*http.Transport)
	if !ok {
		return nil
	}
	t = t.Clone()
	t.MaxIdleConns = 0          // no limit across hosts: the per-host one applies
	t.MaxIdleConnsPerHost = 100 // DefaultTransport keeps 2
	return t
}()

// pooledTransport is the transport of a client built without an HTTPClient. A worker polls,
// reports, heartbeats and (from handlers) heartbeats tasks at once; http.DefaultTransport
// keeps only 2 idle connections per host, so it closed the others after each use and dialed
// again (a TLS handshake each over https). A program that replaced http.DefaultTransport
// (a proxy or instrumentation) keeps it: nil here means http.DefaultTransport at request time.
func pooledTransport() http.RoundTripper {
	if http.DefaultTransport != stdTransport || pooled == nil {
		return nil
	}
	return pooled
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = os.Getenv("ORCH8_URL")
	}
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.APIKey == "" {
		c.APIKey = os.Getenv("ORCH8_API_KEY")
	}
	if c.Tenant == "" {
		c.Tenant = os.Getenv("ORCH8_TENANT") // P-SDK-24
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Transport: pooledTransport()}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.UserAgent == "" {
		c.UserAgent = "orch8-go/" + Version
	}
	return c
}

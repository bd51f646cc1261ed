package orch8

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/orch8/orch8-workers/sdk-go/api"
)

// Orch8Client is the typed Orch8 client, the name it has in every SDK: one method per
// operation of openapi.yaml, each taking a context.Context first. It is safe for
// concurrent use by many goroutines.
type Orch8Client struct {
	cfg Config
	raw *api.Client
	// sleep waits between automatic retries; tests replace it to observe the waits.
	sleep func(ctx context.Context, d time.Duration) bool
}

// Client is the name Orch8Client had before; both name the same type, so code written
// against either compiles.
type Client = Orch8Client

// NewClient builds an Orch8Client; empty Config fields take ORCH8_URL / ORCH8_API_KEY and the
// defaults of section 14 (P-SDK-1).
func NewClient(cfg Config) (*Orch8Client, error) {
	given := cfg.BaseURL
	cfg = cfg.withDefaults()
	if err := checkBaseURL(cfg.BaseURL, given); err != nil {
		return nil, err
	}
	if cfg.Tenant != "" && !tenantID.MatchString(cfg.Tenant) { // P-SDK-24, P-TEN-2
		return nil, fmt.Errorf("orch8: invalid tenant %q: must match ^[A-Za-z0-9_.-]{1,64}$", cfg.Tenant)
	}
	c := &Orch8Client{cfg: cfg, sleep: sleepCtx}
	// Auth and user agent go in as request editors: the generated code stays untouched.
	raw, err := api.NewClient(cfg.BaseURL, api.WithHTTPClient(cfg.HTTPClient), api.WithRequestEditorFn(c.editRequest))
	if err != nil {
		return nil, fmt.Errorf("orch8: %w", err)
	}
	c.raw = raw
	return c, nil
}

// checkBaseURL refuses an address that is not absolute http(s) with a host (P-SDK-1):
// "127.0.0.1:3001" or "localhost" would otherwise fail every request as if the server
// were down and be ridden out as an outage for ever. given is Config.BaseURL as passed
// (empty: ORCH8_URL, then the default, were used); the message names the value as given.
func checkBaseURL(base, given string) error {
	u, err := url.Parse(base)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" && validPort(u.Port()) {
		return nil
	}
	value, source := given, "Config.BaseURL"
	if given == "" {
		value, source = os.Getenv("ORCH8_URL"), "ORCH8_URL"
	}
	return fmt.Errorf("orch8: invalid base URL %q (%s): must be an absolute http:// or https:// URL with a host, e.g. %s (P-SDK-1)",
		value, source, DefaultBaseURL)
}

// validPort: no port, or one in 1-65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// BaseURL is the server address this client talks to.
func (c *Client) BaseURL() string { return c.cfg.BaseURL }

// Tenant is the tenant sent as X-Tenant-Id ("" when none is sent: the key's own, P-TEN-2).
func (c *Client) Tenant() string { return c.cfg.Tenant }

func (c *Client) editRequest(_ context.Context, req *http.Request) error {
	req.Header.Set("User-Agent", c.cfg.UserAgent) // P-SDK-1
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.cfg.APIKey != "" {
		req.Header.Set(headerAuthorization, "Bearer "+c.cfg.APIKey) // P-AUTH-1
	}
	if c.cfg.Tenant != "" {
		req.Header.Set(headerTenant, c.cfg.Tenant) // P-SDK-24: every request, the worker's too
	}
	return nil
}

// call describes one operation: whether repeating it is safe (P-SDK-2) and its timeout.
type call struct {
	op      string
	safe    bool
	timeout time.Duration // zero: Config.Timeout
}

// maxClientRetryAfter is the longest Retry-After the client waits out by itself; a longer
// one surfaces as the error, carrying RetryAfter (P-SDK-16).
const maxClientRetryAfter = api.ClientRetryAfterLimitMs * time.Millisecond

// retryAfterBudget is how much Retry-After one call waits out in all (P-SDK-2), so an
// idempotent enqueue rides out a sustained 429 flood for about 30 s, not 3 retries.
const retryAfterBudget = api.RetryAfterBudgetMs * time.Millisecond

// invoke runs send, maps error answers to *ProblemError and retries safe calls on outages
// (P-SDK-2, classified by IsOutage, P-SDK-16).
func invoke[T any](ctx context.Context, c *Client, cl call, send func(context.Context) (*http.Response, error), parse func(*http.Response) (*T, error)) (*T, error) {
	b := backoff{base: DefaultRetryBase, cap: DefaultRetryCap}
	retries := 0             // retries after outages without Retry-After: at most MaxRetries
	var waited time.Duration // Retry-After delays waited for this call (P-SDK-2)
	for {
		v, err := invokeOnce(ctx, c, cl, send, parse)
		if err == nil {
			return v, nil
		}
		if !cl.safe || c.cfg.MaxRetries <= 0 || !IsOutage(err) {
			return nil, err
		}
		var wait time.Duration
		if pe := (*ProblemError)(nil); errors.As(err, &pe) && pe.RetryAfter > 0 {
			// P-SDK-2: the budget counts the delays the server asked for (the jitter aside),
			// so one Retry-After of exactly 30 s is still waited for (P-SDK-16).
			if pe.RetryAfter > maxClientRetryAfter || waited+pe.RetryAfter > retryAfterBudget {
				return nil, err // P-SDK-16: too long to wait inside a call; it carries the delay
			}
			waited += pe.RetryAfter
			wait = withJitter(pe.RetryAfter) // P-SDK-16: Retry-After replaces the backoff
		} else {
			if retries >= c.cfg.MaxRetries {
				return nil, err
			}
			retries++
			wait = b.next()
		}
		if !c.sleep(ctx, wait) {
			return nil, err
		}
	}
}

func invokeOnce[T any](ctx context.Context, c *Client, cl call, send func(context.Context) (*http.Response, error), parse func(*http.Response) (*T, error)) (*T, error) {
	timeout := cl.timeout
	if timeout <= 0 {
		timeout = c.cfg.Timeout
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := send(actx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // the caller gave up: not an outage
		}
		return nil, connectionError(err, c.cfg.BaseURL, timeout)
	}
	if resp.StatusCode >= 400 {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		if rerr != nil && ctx.Err() == nil && len(body) == 0 {
			return nil, connectionError(rerr, c.cfg.BaseURL, timeout)
		}
		return nil, problemFromResponse(resp, body)
	}
	v, err := parse(resp)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if actx.Err() != nil {
			return nil, connectionError(err, c.cfg.BaseURL, timeout) // timed out while reading the body
		}
		return nil, fmt.Errorf("orch8: %s: decoding the answer: %w", cl.op, err)
	}
	return v, nil
}

// longPollTimeout is wait_ms + 10 s for operations marked x-orch8-long-poll (P-SDK-1).
func longPollTimeout(waitMs *int) time.Duration {
	w := DefaultPollWait
	if waitMs != nil {
		w = time.Duration(*waitMs) * time.Millisecond
	}
	return w + LongPollSlack
}

// hasIdempotencyKey decides x-orch8-retry: idempotency-key (P-SDK-2): a call is repeated
// only when the body carries a non-empty idempotency_key or, for a batch, when every item of
// its array `items` (the operation's body-argument in the spec: tasks, instances) does.
// Fields are found by their JSON names, so a new batch operation needs no code here.
func hasIdempotencyKey(body any, items string) bool {
	v := reflect.ValueOf(body)
	if items == "" {
		return keyed(v)
	}
	list := jsonField(v, items)
	if !list.IsValid() || list.Kind() != reflect.Slice || list.Len() == 0 {
		return false
	}
	for i := 0; i < list.Len(); i++ {
		if !keyed(list.Index(i)) {
			return false
		}
	}
	return true
}

// keyed says whether a struct's optional idempotency_key is given and not "".
func keyed(v reflect.Value) bool {
	k := jsonField(v, "idempotency_key")
	if k.IsValid() && k.Kind() == reflect.Pointer {
		if k.IsNil() {
			return false
		}
		k = k.Elem()
	}
	return k.IsValid() && k.Kind() == reflect.String && k.String() != ""
}

// jsonField is the field of struct v whose JSON name is name (invalid when there is none).
func jsonField(v reflect.Value, name string) reflect.Value {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	for i := 0; i < v.NumField(); i++ {
		if tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ","); tag == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// first returns the first non-nil typed body, or an error naming the unexpected status.
func first[T any](op string, resp *http.Response, bodies ...*T) (*T, error) {
	for _, b := range bodies {
		if b != nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("orch8: %s: unexpected answer %d %s", op, resp.StatusCode, resp.Header.Get("Content-Type"))
}

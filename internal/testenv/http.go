package testenv

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// noRetryClient never re-sends a request by itself: every connection is
// fresh, so net/http's silent retry of a request on a reused connection
// (feasibility §5) cannot happen behind a test's back.
var noRetryClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// Reply is a response read in full.
type Reply struct {
	Status int
	Header http.Header
	Body   string
}

// Replayed reports whether the reply carries the replay marker.
func (r Reply) Replayed() bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// Post sends a JSON POST to the demo API at base+path as user with the
// Idempotency-Key key (sent as a quoted sf-string; empty: no header).
func Post(base, path, user, key, body string) (Reply, error) {
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	resp, err := noRetryClient.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}, err
}

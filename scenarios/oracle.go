package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// The effects oracle's probe, shared by the conformance cases (Env), the
// load checker and the chaos driver: one GET, one integer at Pointer.

// KeyURL is the absolute probe URL for key: "{key}" replaced by the
// URL-escaped key, a relative URL resolved against t.BaseURL.
func (o *Oracle) KeyURL(t *Target, key string) string {
	return o.abs(t, strings.ReplaceAll(o.URL, "{key}", url.QueryEscape(key)))
}

// TotalsURL is the probe URL with its "{key}" query parameter removed (the
// reference contract: /v1/effects?key={key} -> /v1/effects, executions of
// every key). It is "" when the key sits in the path or is not there.
func (o *Oracle) TotalsURL(t *Target) string {
	u, err := url.Parse(o.abs(t, o.URL))
	if err != nil || strings.Contains(u.Path, "{key}") || strings.Contains(u.EscapedPath(), "%7Bkey%7D") {
		return ""
	}
	q := u.Query()
	found := false
	for name, vs := range q {
		for _, v := range vs {
			if v == "{key}" {
				q.Del(name)
				found = true
			}
		}
	}
	if !found {
		return ""
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func (o *Oracle) abs(t *Target, u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return t.BaseURL + u
}

// Header is what the probe sends: the headers of the oracle's principal.
func (o *Oracle) Header(t *Target) http.Header {
	h := http.Header{}
	if p := o.Principal; p >= 0 && p < len(t.Principals) {
		for k, v := range t.Principals[p].Headers {
			h.Set(k, v)
		}
	}
	return h
}

// ParseCount reads the execution count from a probe's response: a 200
// whose JSON body holds an integer at Pointer.
func (o *Oracle) ParseCount(status int, body []byte) (int, error) {
	if status != http.StatusOK {
		return 0, fmt.Errorf("status %d", status)
	}
	doc, err := decodeJSON(body)
	if err != nil {
		return 0, err
	}
	v, ok := jsonx.Pointer(doc, o.Pointer)
	if !ok {
		return 0, fmt.Errorf("nothing at %s", o.Pointer)
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", o.Pointer)
	}
	i, err := num.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s: %v", o.Pointer, err)
	}
	return int(i), nil
}

// Count GETs the probe URL u (KeyURL or TotalsURL) over c and returns the
// count there. Errors name the URL.
func (o *Oracle) Count(ctx context.Context, c *http.Client, t *Target, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	req.Header = o.Header(t)
	resp, err := c.Do(req)
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	n, err := o.ParseCount(resp.StatusCode, body)
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	return n, nil
}

// Executions is how many times the handler ran for key, by the probe,
// summed over the replicas when the oracle counts per replica.
func (o *Oracle) Executions(ctx context.Context, c *http.Client, t *Target, key string) (int, error) {
	total := 0
	for _, r := range o.ByReplica(t) {
		n, err := r.Count(ctx, c, t, r.KeyURL(t, key))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

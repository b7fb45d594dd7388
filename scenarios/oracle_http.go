package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// httpSource is an HTTP evidence source: one GET, the count read from the
// JSON body (an integer at Pointer, or a list's elements: oracle_list.go).
type httpSource struct {
	o      *Oracle // URL made absolute, so a proxied Env probes directly
	t      *Target
	client *http.Client
}

func (s *httpSource) PerKey() bool { return s.o.PerKey() }

// Sees: a counter the handler moves, or a list of what it stored, counts
// an execution however it answered, on every replica (summed when they
// count apart).
func (s *httpSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true}
}

func (s *httpSource) Count(ctx context.Context, key string, rec func(Exchange)) (int, error) {
	if !s.PerKey() {
		n, _, err := s.Total(ctx, rec)
		return n, err
	}
	if key == "" {
		return 0, fmt.Errorf("oracle %s: a per-key oracle cannot count requests sent without a key", s.o)
	}
	return s.read(ctx, s.o.KeyURL(s.t, key), key, rec)
}

func (s *httpSource) Total(ctx context.Context, rec func(Exchange)) (int, bool, error) {
	u := s.o.URL
	if strings.Contains(u, "{key}") {
		if u = s.o.TotalsURL(s.t); u == "" {
			return 0, false, nil
		}
	}
	n, err := s.read(ctx, u, "", rec)
	return n, true, err
}

// read GETs u and counts there: for key (a list's elements holding the key
// or its marker token) or, with key "", every element. Errors name the
// URL.
func (s *httpSource) read(ctx context.Context, u, key string, rec func(Exchange)) (int, error) {
	x := Exchange{Label: "oracle", Request: ExchangeRequest{Method: http.MethodGet, URL: u, Header: s.o.Header(s.t)}}
	status, body, err := s.get(ctx, &x)
	if rec != nil {
		rec(s.t.redactExchange(x))
	}
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	var match []string
	if key != "" {
		match = []string{key}
		if tok := s.t.token(key); tok != "" {
			match = append(match, tok)
		}
	}
	n, err := s.o.parseCount(status, body, match)
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	return n, nil
}

// get sends x.Request and fills in x's response.
func (s *httpSource) get(ctx context.Context, x *Exchange) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, x.Request.URL, nil)
	if err != nil {
		x.Error = err.Error()
		return 0, nil, err
	}
	req.Header = x.Request.Header.Clone()
	x.Start = time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		x.Error = err.Error()
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	x.Duration = time.Now().Sub(x.Start)
	x.Response = &ExchangeResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err != nil {
		x.Error = err.Error()
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

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

// parseCount reads the execution count from a probe's response: a 200
// whose JSON body holds an integer at Pointer, or an array there (or at
// Count.Array) whose elements are counted; with match set and Count.Where,
// only the elements whose member there is one of match.
func (o *Oracle) parseCount(status int, body []byte, match []string) (int, error) {
	if status != http.StatusOK {
		return 0, fmt.Errorf("status %d", status)
	}
	doc, err := decodeJSON(body)
	if err != nil {
		return 0, err
	}
	if o.Count != nil {
		return o.Count.count(doc, match)
	}
	v, ok := jsonx.Pointer(doc, o.Pointer)
	if !ok {
		return 0, fmt.Errorf("nothing at %s%s", o.Pointer, arrayHint(doc, o.Pointer))
	}
	switch v := v.(type) {
	case []any: // a list endpoint: its length is a global count
		return len(v), nil
	case json.Number:
		i, err := v.Int64()
		if err != nil {
			return 0, fmt.Errorf("%s: %v", o.Pointer, err)
		}
		return int(i), nil
	}
	return 0, fmt.Errorf("%s is not a number or an array", o.Pointer)
}

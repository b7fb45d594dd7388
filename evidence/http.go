package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/wire"
)

// httpSource is an HTTP evidence source: one GET, the count read from the
// JSON body (an integer at Pointer, or a list's elements: oracle_list.go).
type httpSource struct {
	o      *apispec.Oracle // URL made absolute, so a proxied Env probes directly
	t      *apispec.Target
	d      *Downstream // its tokens mark list elements too
	client *http.Client
}

func (s *httpSource) PerKey() bool { return s.o.PerKey() }

// Sees: a counter the handler moves, or a list of what it stored, counts
// an execution however it answered, on every replica (summed when they
// count apart).
func (s *httpSource) Sees() Sight {
	return Sight{ErrorAnswers: true, LostResponses: true, Replicas: true, Principals: []int{s.o.Principal}}
}

func (s *httpSource) Count(ctx context.Context, key string, rec func(wire.Exchange)) (int, error) {
	if !s.PerKey() {
		n, _, err := s.Total(ctx, rec)
		return n, err
	}
	if key == "" {
		return 0, fmt.Errorf("oracle %s: a per-key oracle cannot count requests sent without a key", s.o)
	}
	return s.read(ctx, s.o.KeyURL(s.t, key), key, rec)
}

func (s *httpSource) Total(ctx context.Context, rec func(wire.Exchange)) (int, bool, error) {
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
func (s *httpSource) read(ctx context.Context, u, key string, rec func(wire.Exchange)) (int, error) {
	x := wire.Exchange{Label: "oracle", Request: wire.ExchangeRequest{Method: http.MethodGet, URL: u, Header: s.o.Header(s.t)}}
	status, body, err := s.get(ctx, &x)
	if rec != nil {
		rec(x.Redacted(s.t))
	}
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	var match []string
	if key != "" {
		match = []string{key}
		if tok := s.d.Token(key); tok != "" {
			match = append(match, tok)
		}
	}
	n, err := parseCount(s.o, status, body, match)
	if err != nil {
		return 0, fmt.Errorf("oracle %s: %v", u, err)
	}
	return n, nil
}

// get sends x.Request and fills in x's response.
func (s *httpSource) get(ctx context.Context, x *wire.Exchange) (int, []byte, error) {
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
	body, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxBody))
	x.Duration = time.Now().Sub(x.Start)
	x.Response = &wire.ExchangeResponse{Status: resp.StatusCode, Header: resp.Header, Body: body}
	if err != nil {
		x.Error = err.Error()
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// parseCount reads the execution count from a probe's response: a 200
// whose JSON body holds an integer at Pointer, or an array there (or at
// Count.Array) whose elements are counted; with match set and Count.Where,
// only the elements whose member there is one of match.
func parseCount(o *apispec.Oracle, status int, body []byte, match []string) (int, error) {
	if status != http.StatusOK {
		return 0, fmt.Errorf("status %d", status)
	}
	doc, err := jsonx.Decode(body)
	if err != nil {
		return 0, err
	}
	if o.Count != nil {
		return listCount(o.Count, doc, match)
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

package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
	"github.com/idemcheck/idemcheck/scenarios"
)

// OracleReport is what the effects oracle said about the run.
type OracleReport struct {
	// Available is false when the target declares no oracle; execution
	// counts are then unverified (replay equality is still checked).
	Available bool `json:"available"`
	// Totals: executions before and after the measured window, and the
	// range the measured requests can explain.
	TotalsURL   string `json:"totals_url,omitempty"`
	Before      int64  `json:"before"`
	After       int64  `json:"after"`
	ExpectedMin uint64 `json:"expected_min"`
	ExpectedMax uint64 `json:"expected_max"`
	// KeysProbed is how many keys were asked for their own count.
	KeysProbed int    `json:"keys_probed"`
	Error      string `json:"error,omitempty"`
}

// oracle asks the target's effects endpoint how often the handler ran.
type oracle struct {
	client  *http.Client
	base    string
	spec    scenarios.Oracle
	headers map[string]string
}

func newOracle(t *scenarios.Target, client *http.Client) *oracle {
	if t.Oracle == nil || t.Oracle.URL == "" {
		return nil
	}
	o := &oracle{client: client, base: t.BaseURL, spec: *t.Oracle}
	if p := t.Oracle.Principal; p >= 0 && p < len(t.Principals) {
		o.headers = t.Principals[p].Headers
	}
	return o
}

func (o *oracle) abs(u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return o.base + u
}

// totalsURL is the per-key URL with the {key} query parameter removed
// (the reference contract: /v1/effects?key={key} -> /v1/effects). It is
// empty when the key sits in the path.
func (o *oracle) totalsURL() string {
	u, err := url.Parse(o.abs(o.spec.URL))
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

func (o *oracle) keyURL(key string) string {
	return o.abs(strings.ReplaceAll(o.spec.URL, "{key}", url.QueryEscape(key)))
}

// count GETs u and reads the integer at the oracle's pointer.
func (o *oracle) count(ctx context.Context, u string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	for k, v := range o.headers {
		req.Header.Set(k, v)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("oracle %s: status %d", u, resp.StatusCode)
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("oracle %s: %w", u, err)
	}
	v, ok := jsonx.Pointer(doc, o.spec.Pointer)
	if !ok {
		return 0, fmt.Errorf("oracle %s: no value at %q", u, o.spec.Pointer)
	}
	n, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("oracle %s: %q is %T, want a number", u, o.spec.Pointer, v)
	}
	return int64(n), nil
}

// Per-key probes after a run, bounded so a large run ends quickly.
const (
	maxProbesPerKind = 50
)

// verify checks the execution counts of the run against what the checker
// saw: the totals delta and a bounded sample of per-key counts.
func (o *oracle) verify(ctx context.Context, rep *OracleReport, c *checker, pool []string) {
	rep.ExpectedMin, rep.ExpectedMax = c.expectedExecutions()
	if rep.TotalsURL != "" {
		after, err := o.count(ctx, rep.TotalsURL)
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.After = after
			delta := after - rep.Before
			if delta < int64(rep.ExpectedMin) || delta > int64(rep.ExpectedMax) {
				c.violate(Violation{Kind: OracleTotal, Detail: fmt.Sprintf(
					"oracle counted %d executions in the window; the measured requests explain %d..%d (one per key)",
					delta, rep.ExpectedMin, rep.ExpectedMax)})
			}
		}
	}
	// Pool keys executed once during warm-up and must stay at one; keys
	// sent in the window must be at one if any response was 2xx.
	var executed, uncertainKeys []string
	for k, out := range c.keys {
		if out.executed {
			executed = append(executed, k)
		} else if out.uncertain {
			uncertainKeys = append(uncertainKeys, k)
		}
	}
	sort.Strings(executed)
	sort.Strings(uncertainKeys)
	probe := func(keys []string, lo, hi int64) {
		for i, k := range keys {
			if i >= maxProbesPerKind || ctx.Err() != nil {
				return
			}
			n, err := o.count(ctx, o.keyURL(k))
			if err != nil {
				if rep.Error == "" {
					rep.Error = err.Error()
				}
				continue
			}
			rep.KeysProbed++
			if n < lo || n > hi {
				c.violate(Violation{Kind: OracleKey, Key: k,
					Detail: fmt.Sprintf("oracle counted %d executions for this key, want %d..%d", n, lo, hi)})
			}
		}
	}
	probe(pool, 1, 1)
	probe(executed, 1, 1)
	probe(uncertainKeys, 0, 1)
}

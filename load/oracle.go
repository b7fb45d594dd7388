package load

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/evidence"
)

// OracleReport is what the effects oracle said about the run.
type OracleReport struct {
	// Available is false when the target declares no oracle; execution
	// counts are then unverified (replay equality is still checked).
	Available bool `json:"available"`
	// Totals: executions before and after the measured window, and the
	// range the measured requests can explain.
	Totals bool `json:"totals,omitempty"`
	// TotalsURL is where an HTTP counter's totals were read.
	TotalsURL   string `json:"totals_url,omitempty"`
	Before      int64  `json:"before"`
	After       int64  `json:"after"`
	ExpectedMin uint64 `json:"expected_min"`
	ExpectedMax uint64 `json:"expected_max"`
	// KeysProbed is how many keys were asked for their own count.
	KeysProbed int    `json:"keys_probed"`
	Error      string `json:"error,omitempty"`
	// Note says why a downstream double counts globally or not at all
	// (its calls hold no token, or it was never called).
	Note string `json:"note,omitempty"`
}

// Unbounded reports whether the measured requests explain any count: keys
// outlived their TTL, so the upper bound is open.
func (o *OracleReport) Unbounded() bool { return o.ExpectedMax >= unbounded }

// oracle asks the target's evidence sources how often the handler ran.
type oracle struct {
	ev *evidence.Evidence
}

// newOracle opens t's evidence, d being its downstream double (nil when t
// has no evidence); close it after.
func newOracle(ctx context.Context, t *apispec.Target, client *http.Client, d *evidence.Downstream) (*oracle, error) {
	ev, err := evidence.Open(ctx, t, client, d)
	if err != nil || ev == nil {
		return nil, err
	}
	return &oracle{ev: ev}, nil
}

func (o *oracle) close() {
	if o != nil {
		_ = o.ev.Close()
	}
}

// totals reads every key's executions; ok is false when the sources have
// no such count.
func (o *oracle) totals(ctx context.Context) (int64, bool, error) {
	n, ok, err := o.ev.Total(ctx, nil)
	return int64(n), ok, err
}

// Per-key probes after a run, bounded so a large run ends quickly.
const (
	maxProbesPerKind = 50
)

// verify checks the execution counts of the run against what the checker
// saw: the totals delta and a bounded sample of per-key counts.
func (o *oracle) verify(ctx context.Context, rep *OracleReport, c *checker, pool []string) {
	rep.ExpectedMin, rep.ExpectedMax = c.expectedExecutions()
	if rep.Totals {
		after, _, err := o.totals(ctx)
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
	// sent in the window must be at one if any response was 2xx; either
	// may have run again if its requests straddle its TTL.
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
	probe := func(keys []string, lo int64) {
		for i, k := range keys {
			hi := c.maxExecutions(k)
			if i >= maxProbesPerKind || ctx.Err() != nil {
				return
			}
			got, err := o.ev.Count(ctx, k, nil)
			n := int64(got)
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
	if !o.ev.PerKey() {
		return // a global count says nothing about one key
	}
	probe(pool, 1)
	probe(executed, 1)
	probe(uncertainKeys, 0)
}

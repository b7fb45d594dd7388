package load

import (
	"context"
	"fmt"
	"net/http"
	"sort"

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
	client *http.Client
	target *scenarios.Target
}

func newOracle(t *scenarios.Target, client *http.Client) *oracle {
	if t.Oracle == nil || t.Oracle.URL == "" {
		return nil
	}
	return &oracle{client: client, target: t}
}

// count reads the execution count at the probe URL at(oracle), summed
// over the replicas when the oracle counts per replica.
func (o *oracle) count(ctx context.Context, at func(*scenarios.Oracle) string) (int64, error) {
	var total int64
	for _, r := range o.target.Oracle.ByReplica(o.target) {
		n, err := r.Count(ctx, o.client, o.target, at(r))
		if err != nil {
			return 0, err
		}
		total += int64(n)
	}
	return total, nil
}

// totals is the probe URL of every key's executions ("" when none).
func (o *oracle) totals(r *scenarios.Oracle) string { return r.TotalsURL(o.target) }

// Per-key probes after a run, bounded so a large run ends quickly.
const (
	maxProbesPerKind = 50
)

// verify checks the execution counts of the run against what the checker
// saw: the totals delta and a bounded sample of per-key counts.
func (o *oracle) verify(ctx context.Context, rep *OracleReport, c *checker, pool []string) {
	rep.ExpectedMin, rep.ExpectedMax = c.expectedExecutions()
	if rep.TotalsURL != "" {
		after, err := o.count(ctx, o.totals)
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
			n, err := o.count(ctx, func(r *scenarios.Oracle) string { return r.KeyURL(o.target, k) })
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
	probe(pool, 1)
	probe(executed, 1)
	probe(uncertainKeys, 0)
}

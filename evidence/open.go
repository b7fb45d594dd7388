package evidence

import (
	"net/http"

	"github.com/idemcheck/idemcheck/apispec"
)

// open makes the oracle's sources for t: one per replica for a per-replica
// HTTP counter and, for a per-principal one, per principal too (summed
// like the replicas'), else one. HTTP sources send over c.
func open(o *apispec.Oracle, t *apispec.Target, c *http.Client, d *Downstream) ([]Source, error) {
	if o.Downstream != "" {
		s, err := openDownstream(d, o.Downstream)
		if err != nil {
			return nil, err
		}
		return []Source{s}, nil
	}
	if o.SQL != nil {
		s, err := openSQL(o.SQL)
		if err != nil {
			return nil, err
		}
		return []Source{s}, nil
	}
	var out []Source
	for _, r := range o.ByReplica(t) {
		for _, p := range r.ByPrincipal(t) {
			abs := *p
			abs.URL = p.Abs(t, p.URL)
			out = append(out, &httpSource{o: &abs, t: t, d: d, client: c})
		}
	}
	return out, nil
}

package apispec

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Oracle is the config of one evidence source: where executions of the API
// under test are counted from outside. Exactly one kind is set:
//   - url (+ pointer): an HTTP counter, an integer at pointer in a GET's
//     JSON body (oracle_http.go). "{key}" in the URL makes it per key.
//   - url + count (or a pointer at an array): a list endpoint, its array's
//     elements counted, only those whose member at count.where equals the
//     key when where is set (oracle_list.go).
//   - sql: a query returning one integer, "$1" the key (oracle_sql.go).
//   - downstream: a route of the downstream double, the calls holding a
//     key's token counted (oracle_downstream.go).
//
// A per-key source is asked for one key's executions; a global one counts
// every execution, which the engine reads around each key's requests, one
// key at a time (see Env.Executions).
type Oracle struct {
	// URL is absolute or relative to BaseURL; "{key}" is replaced by the
	// (unquoted, URL-escaped) idempotency key of the case.
	URL string `yaml:"url" json:"url"`
	// Pointer is the RFC 6901 pointer to an integer execution count, or
	// to an array whose elements are counted.
	Pointer string `yaml:"pointer" json:"pointer"`
	// Count makes URL a list endpoint: its array's elements are counted.
	Count *ListCount `yaml:"count,omitempty" json:"count,omitempty"`
	// SQL counts rows in the API's database.
	SQL *SQLOracle `yaml:"sql,omitempty" json:"sql,omitempty"`
	// Downstream names a route of the downstream double: a key's
	// executions are the route's calls that hold the key's token.
	Downstream string `yaml:"downstream,omitempty" json:"downstream,omitempty"`
	// Principal (index into Principals) whose headers the probe sends.
	Principal int `yaml:"principal" json:"principal"`
	// PerPrincipal: each principal sees only its own executions (a
	// tenant-scoped list or counter), so the probe is sent with every
	// principal's headers and the counts summed. Principal is then unused.
	PerPrincipal bool `yaml:"per_principal" json:"per_principal,omitempty"`
	// PerReplica: each replica counts only its own executions (an
	// in-memory counter, like the reference's), so a relative URL is read
	// on every replica and the counts summed. Default: one shared count,
	// read at BaseURL.
	PerReplica bool `yaml:"per_replica" json:"per_replica,omitempty"`
}

// PerKey reports whether the oracle counts executions per key.
func (o *Oracle) PerKey() bool {
	if o.Downstream != "" {
		return true // calibration may find the calls untokened: the run's evidence then counts globally
	}
	if o.SQL != nil {
		return o.SQL.perKey()
	}
	return strings.Contains(o.URL, "{key}") || (o.Count != nil && o.Count.Where != "")
}

// String names the oracle in errors and notes: no secret in it.
func (o *Oracle) String() string {
	switch {
	case o.Downstream != "":
		return "downstream " + o.Downstream
	case o.SQL != nil:
		return fmt.Sprintf("sql %q", o.SQL.Query)
	case o.Count != nil:
		return fmt.Sprintf("list %s %s", o.URL, o.Count)
	}
	return fmt.Sprintf("url %s pointer %s", o.URL, o.Pointer)
}

// identity is what makes two oracles count the same executions.
func (o *Oracle) identity() string {
	return fmt.Sprintf("%s|%s|%v|%v|%d|%v|%v|%s", o.URL, o.Pointer, o.Count, o.SQL, o.Principal, o.PerReplica, o.PerPrincipal, o.Downstream)
}

// validate checks an oracle (nil is fine); at names it in errors.
func (o *Oracle) validate(at string, principals int) error {
	if o == nil {
		return nil
	}
	if o.Downstream != "" { // its route is checked by validateDownstream
		if o.URL != "" || o.Pointer != "" || o.Count != nil || o.SQL != nil || o.PerReplica || o.PerPrincipal {
			return fmt.Errorf("%s.downstream %q: an oracle is one source; drop url, pointer, count, sql, per_replica and per_principal beside downstream", at, o.Downstream)
		}
		return nil
	}
	if o.SQL != nil {
		if o.URL != "" || o.Pointer != "" || o.Count != nil || o.PerReplica || o.PerPrincipal {
			return fmt.Errorf("%s.sql: an oracle is one source; drop url, pointer, count, per_replica and per_principal beside sql (a database sees every principal's rows)", at)
		}
		return o.SQL.validate(at + ".sql")
	}
	if o.PerPrincipal && o.Principal != 0 {
		return fmt.Errorf("%s.principal %d: per_principal reads with every principal's headers; drop principal", at, o.Principal)
	}
	if u, err := url.Parse(o.URL); o.URL == "" || err != nil ||
		(!strings.HasPrefix(o.URL, "/") && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "")) {
		return fmt.Errorf("%s.url %q: want a path starting with / or an absolute http(s) URL (or sql: for a database count)", at, o.URL)
	}
	if o.PerReplica && !strings.HasPrefix(o.URL, "/") {
		// An absolute URL is one counter, read once: per_replica would
		// silently count nothing more.
		return fmt.Errorf("%s.per_replica: needs a url that is a path each replica answers (%q is absolute: one counter for all; drop per_replica)", at, o.URL)
	}
	if o.Count != nil {
		if o.Pointer != "" {
			return fmt.Errorf("%s.pointer %q: a list oracle counts at count.array; drop pointer", at, o.Pointer)
		}
		if err := o.Count.validate(at + ".count"); err != nil {
			return err
		}
	} else if _, err := jsonx.ParsePointer(o.Pointer); err != nil || o.Pointer == "" {
		return fmt.Errorf("%s.pointer %q: want an RFC 6901 pointer to an integer (e.g. /executions) or to an array", at, o.Pointer)
	}
	if o.Principal < 0 || o.Principal >= principals {
		return fmt.Errorf("%s.principal %d: want an index into principals (0..%d)", at, o.Principal, principals-1)
	}
	return nil
}

// ByPrincipal returns o once per principal (Principal set) when o reads
// per principal; else o alone.
func (o *Oracle) ByPrincipal(t *Target) []*Oracle {
	if !o.PerPrincipal {
		return []*Oracle{o}
	}
	out := make([]*Oracle, len(t.Principals))
	for i := range t.Principals {
		p := *o
		p.Principal = i
		out[i] = &p
	}
	return out
}

// Header is what an HTTP probe sends: the headers of the oracle's principal.
func (o *Oracle) Header(t *Target) http.Header {
	h := http.Header{}
	if p := o.Principal; p >= 0 && p < len(t.Principals) {
		for k, v := range t.Principals[p].Headers {
			h.Set(k, v)
		}
	}
	return h
}

// OracleOf is the oracle counting op's executions: its own, else the
// target's (nil: none).
func (t *Target) OracleOf(op *Operation) *Oracle {
	if op != nil && op.Oracle != nil {
		return op.Oracle
	}
	return t.Oracle
}

// Oracles lists the distinct oracles that count the operations'
// executions, in operation order. Summed, they count every execution of
// the API under test, so they must count disjoint sets (the calibration
// at the start of a run catches an overlap: one request counted twice).
func (t *Target) Oracles() []*Oracle {
	var out []*Oracle
	seen := map[string]bool{}
	add := func(o *Oracle) {
		if o != nil && !seen[o.identity()] {
			seen[o.identity()] = true
			out = append(out, o)
		}
	}
	for i := range t.Operations {
		add(t.OracleOf(&t.Operations[i]))
	}
	if len(t.Operations) == 0 {
		add(t.Oracle)
	}
	return out
}

// GlobalOracle reports whether executions are counted by global counters
// (no key in the oracles' URLs or queries). Validate refuses a mix of
// both kinds. A run's evidence may turn global after calibration
// (evidence.Evidence.PerKey).
func (t *Target) GlobalOracle() bool {
	os := t.Oracles()
	return len(os) > 0 && !os[0].PerKey()
}

// KeyURL is the absolute probe URL for key: "{key}" replaced by the
// URL-escaped key, a relative URL resolved against t.BaseURL.
func (o *Oracle) KeyURL(t *Target, key string) string {
	return o.Abs(t, strings.ReplaceAll(o.URL, "{key}", url.QueryEscape(key)))
}

// TotalsURL is the probe URL with its "{key}" query parameter removed (the
// reference contract: /v1/effects?key={key} -> /v1/effects, executions of
// every key). It is "" when the key sits in the path or is not there.
func (o *Oracle) TotalsURL(t *Target) string {
	u, err := url.Parse(o.Abs(t, o.URL))
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

// Abs resolves u, a URL of the oracle, against t.BaseURL when relative.
func (o *Oracle) Abs(t *Target, u string) string {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return u
	}
	return t.BaseURL + u
}

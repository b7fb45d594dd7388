package testenv

import "testing"

// StartReplicas runs n `idemcheck serve` processes with the same args: n
// replicas of one API when args name a shared store (--store postgres
// --dsn DSN, --store redis --redis-url URL). They start one after the
// other, so that schema creation never races. Each is killed when t ends.
func StartReplicas(t testing.TB, bin string, n int, args ...string) []*Serve {
	t.Helper()
	out := make([]*Serve, n)
	for i := range out {
		out[i] = StartServe(t, bin, args...)
	}
	return out
}

// URLs returns the replicas' base URLs.
func URLs(ss []*Serve) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.URL
	}
	return out
}

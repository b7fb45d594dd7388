package apispec

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// validateReplicas checks Target.Replicas; the error names the entry. A
// gRPC target's replicas are servers of the same scheme as its base URL
// (grpc:// or grpcs://: one TLS setting serves them all); an HTTP
// target's, http(s) URLs.
func (t *Target) validateReplicas() error {
	if len(t.Replicas) == 1 {
		return fmt.Errorf("replicas: %d base URL; list at least 2 (or none)", len(t.Replicas))
	}
	grpcScheme, _, _ := strings.Cut(t.BaseURL, "://")
	for i, r := range t.Replicas {
		if t.IsGRPC() {
			if !grpcAddress(r) || !strings.HasPrefix(r, grpcScheme+"://") {
				return fmt.Errorf("replicas[%d] %q: want %s://host:port like base_url (a gRPC target's replicas are all grpc:// or all grpcs://)", i, r, grpcScheme)
			}
			continue
		}
		u, err := url.Parse(r)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("replicas[%d] %q: want an absolute http(s) URL", i, r)
		}
	}
	return nil
}

// AddReplicas makes the target's replicas BaseURL followed by bases
// (--replica: another replica of the same API). perReplicaOracle marks the
// target's oracle as counting per replica (the reference contract: each
// process counts its own).
func (t *Target) AddReplicas(bases []string, perReplicaOracle bool) error {
	if t.BaseURL == "" {
		return errors.New("--replica: needs --target or the config's base_url (chaos --target-cmd CMD --replicas N starts several)")
	}
	t.Replicas = []string{t.BaseURL}
	for _, b := range bases {
		t.Replicas = append(t.Replicas, strings.TrimRight(b, "/"))
	}
	if err := t.validateReplicas(); err != nil {
		return fmt.Errorf("--replica: %v", err)
	}
	if perReplicaOracle && t.Oracle != nil && t.Oracle.SQL == nil {
		o := *t.Oracle
		o.PerReplica = true
		t.Oracle = &o
	}
	return nil
}

// Bases returns the base URLs requests may go to: the replicas when there
// are any, else BaseURL alone.
func (t *Target) Bases() []string {
	if len(t.Replicas) > 0 {
		return t.Replicas
	}
	return []string{t.BaseURL}
}

// ByReplica returns o once per replica, its relative URL made absolute
// against each replica, when o counts per replica; else o alone.
func (o *Oracle) ByReplica(t *Target) []*Oracle {
	if !o.PerReplica || len(t.Replicas) == 0 || strings.HasPrefix(o.URL, "http://") || strings.HasPrefix(o.URL, "https://") {
		return []*Oracle{o}
	}
	out := make([]*Oracle, len(t.Replicas))
	for i, base := range t.Replicas {
		r := *o
		r.URL = base + o.URL
		out[i] = &r
	}
	return out
}

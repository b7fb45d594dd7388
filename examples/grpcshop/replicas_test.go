package main

import (
	"testing"
)

// TestReplicas: two grpcshop processes on one database, charging one
// provider (the double), are one API to idemcheck (replicas: [A, B]):
// the correct build keeps every promise across them, its claim and its
// records being the database's; check-then-insert's racing claim lets a
// burst spread over both execute more than once.
func TestReplicas(t *testing.T) {
	all := []string{"replicas/burst-across", "replicas/in-flight-other-replica", "replicas/replay-other-replica",
		"replicas/mismatch-other-replica", "replicas/other-user-other-replica", "replicas/ttl-other-replica"}
	for _, tc := range []struct {
		defect defect
		run    []string
		status string // of every case run
		code   int
	}{
		{"", all, "pass", 0},
		{checkThenInsert, []string{"replicas/burst-across"}, "fail", 1},
	} {
		t.Run("build="+string(tc.defect), func(t *testing.T) {
			twoReplicas := func(c map[string]any, dsn string) {
				provider := "http://" + c["downstream"].(map[string]any)["listen"].(string)
				c["replicas"] = []any{c["base_url"], "grpc://" + startService(t, dsn, provider, tc.defect)}
			}
			var args []string
			for _, id := range tc.run {
				args = append(args, "--run", id)
			}
			code, rep := check(t, "idemcheck.yaml", tc.defect, twoReplicas, args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			for _, id := range tc.run {
				if r := rep.result(id); r == nil || r.Status != tc.status {
					t.Errorf("%s: %+v, want %s", id, r, tc.status)
				}
			}
			if len(rep.Results) != len(tc.run) {
				t.Errorf("%d results, want %d", len(rep.Results), len(tc.run))
			}
		})
	}
}

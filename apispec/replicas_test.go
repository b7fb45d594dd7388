package apispec

import (
	"slices"
	"strings"
	"testing"
)

// TestReplicasConfig: the replicas: list and --replica, each outcome with
// the rule it checks.
func TestReplicasConfig(t *testing.T) {
	const rest = "principals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, body: {amount: 1}}]\n"
	cases := []struct {
		name, yaml  string
		base        string   // want BaseURL
		replicas    []string // want Replicas
		err         string   // want an error containing this
		explanation string
	}{
		{"base defaults to the first", "replicas: [http://127.0.0.1:1/, http://127.0.0.1:2]\n" + rest, "http://127.0.0.1:1", []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, "",
			"without base_url the single-replica cases go to replicas[0] (trailing slashes trimmed)"},
		{"base kept", "base_url: http://127.0.0.1:9\nreplicas: [http://127.0.0.1:1, http://127.0.0.1:2]\n" + rest, "http://127.0.0.1:9", []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, "",
			"a base_url given beside replicas stays replica A"},
		{"one replica", "replicas: [http://127.0.0.1:1]\n" + rest, "", nil, "list at least 2",
			"one replica is no spread: a config error, not a silent skip"},
		{"relative replica", "replicas: [http://127.0.0.1:1, /api]\n" + rest, "", nil, `replicas[1] "/api"`,
			"each entry is an absolute http(s) URL, named by index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg, _, err := ParseConfig([]byte(c.yaml))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q (%s)", err, c.err, c.explanation)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v (%s)", err, c.explanation)
			}
			if tg.BaseURL != c.base || !slices.Equal(tg.Replicas, c.replicas) {
				t.Errorf("base %q replicas %v, want %q %v (%s)", tg.BaseURL, tg.Replicas, c.base, c.replicas, c.explanation)
			}
		})
	}
}

// TestOracleByReplica: a per-replica oracle is read on every replica; a
// shared one (or an absolute URL) once.
func TestOracleByReplica(t *testing.T) {
	tg := &Target{BaseURL: "http://a", Replicas: []string{"http://a", "http://b"}}
	cases := []struct {
		name string
		o    Oracle
		want []string
	}{
		{"per replica", Oracle{URL: "/e?key={key}", PerReplica: true}, []string{"http://a/e?key=k", "http://b/e?key=k"}},
		{"shared", Oracle{URL: "/e?key={key}"}, []string{"http://a/e?key=k"}},
		{"absolute", Oracle{URL: "http://c/e?key={key}", PerReplica: true}, []string{"http://c/e?key=k"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range c.o.ByReplica(tg) {
			got = append(got, r.KeyURL(tg, "k"))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

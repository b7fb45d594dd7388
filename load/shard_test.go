package load

import (
	"strings"
	"testing"
)

// TestParseShard: I/N with 0 <= I < N; every refusal names the value.
func TestParseShard(t *testing.T) {
	cases := []struct {
		in, err     string
		want        Shard
		explanation string
	}{
		{"0/3", "", Shard{0, 3}, "the first of three (JOB_COMPLETION_INDEX is 0-based)"},
		{"2/3", "", Shard{2, 3}, "the last of three"},
		{"3/3", `shard "3/3"`, Shard{}, "an index must be below N"},
		{"-1/3", `shard "-1/3"`, Shard{}, "no negative index"},
		{"1", `shard "1"`, Shard{}, "N is required"},
		{"a/b", `shard "a/b"`, Shard{}, "numbers only"},
		{"0/0", `shard "0/0"`, Shard{}, "at least one shard"},
	}
	for _, c := range cases {
		got, err := ParseShard(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q (%s)", c.in, err, c.err, c.explanation)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %v %v, want %v (%s)", c.in, got, err, c.want, c.explanation)
		}
	}
}

// TestShardKeysDisjoint: shards with the same hash-key seed never send the
// same key, and together they cover the unsharded sequence.
func TestShardKeysDisjoint(t *testing.T) {
	const n, per = 3, 1000
	seen := map[string]int{}
	for i := range n {
		gen := Shard{i, n}.keys(HashKeys("seed"))
		for k := uint64(1); k <= per; k++ {
			key := gen(k)
			if j, dup := seen[key]; dup {
				t.Fatalf("key %s from shards %d and %d", key, j, i)
			}
			seen[key] = i
		}
	}
	all := HashKeys("seed")
	for k := uint64(1); k <= n*per; k++ {
		if _, ok := seen[all(k)]; !ok {
			t.Fatalf("unsharded key %d is in no shard", k)
		}
	}
}

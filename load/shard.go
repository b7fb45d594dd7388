package load

import (
	"fmt"
	"strconv"
	"strings"
)

// maxShards bounds --shard N.
const maxShards = 10_000

// Shard is this process's part of a run spread over several load
// generators: index I of N (0-based, as a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX). Every shard runs the same plan (so the total
// rate is N times the plan's); their key spaces are disjoint.
type Shard struct{ I, N int }

// ParseShard reads "I/N" with 0 <= I < N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || n > maxShards || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 <= I < N <= %d (e.g. 0/3)", s, maxShards)
	}
	return Shard{I: i, N: n}, nil
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// keys gives shard I the I-th of every N sequence numbers of gen: with
// hash keys (the same seed on every shard) the key spaces are disjoint by
// construction; random keys are disjoint already and stay so.
func (s Shard) keys(gen KeyGen) KeyGen {
	if s.N <= 1 {
		return gen
	}
	n, i := uint64(s.N), uint64(s.I)
	return func(k uint64) string { return gen((k-1)*n + i + 1) }
}

// WithShard makes this run shard s of s.N (see Shard).
func WithShard(s Shard) Option { return func(c *config) { c.shard = s } }

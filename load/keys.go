package load

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Path is what a request exercises on the server, known from what was sent.
type Path string

const (
	Hit        Path = "hit"        // replay of a key completed during warm-up
	Miss       Path = "miss"       // a fresh key: the handler runs
	Contention Path = "contention" // one of K hot keys sent concurrently
	NoKey      Path = "nokey"      // no key header: the baseline
	warmup     Path = "warmup"     // pool creation, never measured
)

// Paths lists the measured paths in report order.
var Paths = []Path{Hit, Miss, Contention, NoKey}

// Mode picks the key strategy of a run.
type Mode string

const (
	ModeMiss       Mode = "miss"
	ModeHit        Mode = "hit"
	ModeMix        Mode = "mix"
	ModeContention Mode = "contention"
	ModeNoKey      Mode = "nokey"
)

// Modes lists the valid modes.
var Modes = []Mode{ModeMiss, ModeHit, ModeMix, ModeContention, ModeNoKey}

// ParseMode validates a mode name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("mode %q: want one of miss, hit, mix, contention, nokey", s)
}

// Produces reports the paths a mode sends requests on.
func (m Mode) Produces() []Path {
	switch m {
	case ModeMiss:
		return []Path{Miss}
	case ModeHit:
		return []Path{Hit}
	case ModeMix:
		return []Path{Hit, Miss}
	case ModeContention:
		return []Path{Contention}
	case ModeNoKey:
		return []Path{NoKey}
	}
	return nil
}

// KeyGen makes the n-th idempotency key of a run (apispec.KeyGen).
type KeyGen = apispec.KeyGen

// RandomKeys and HashKeys are the client-generated key strategies of the
// request layer (scenarios/keys.go), shared with run and chaos.
var (
	RandomKeys = apispec.RandomKeys
	HashKeys   = apispec.HashKeys
)

// keySource hands out a run's fresh keys: client-generated ones numbered
// by next, or server-issued ones (key_source). The first fetch error stops
// the attack (the targeter fails) and is the run's error.
type keySource struct {
	keys *wire.Keys
	ctx  context.Context
	next *atomic.Uint64
	err  atomic.Pointer[error]
}

func (k *keySource) new() (string, error) {
	if !k.keys.Issued() {
		return k.keys.Gen(k.next.Add(1)), nil
	}
	key, err := k.keys.Next(k.ctx, nil)
	if err != nil {
		k.err.CompareAndSwap(nil, &err)
	}
	return key, err
}

// failed is the first key fetch error, nil when none.
func (k *keySource) failed() error {
	if e := k.err.Load(); e != nil {
		return *e
	}
	return nil
}

// request is the fixed part of every request of a run. Every request is
// built by wire.Build, the engine's builder (the key in the target's
// field and syntax, the principal, the operation's headers; a gRPC
// target's key in its message field or metadata), then marked with the
// double's token, then turned into a vegeta.Target by vegetaTarget, the
// one adapter.
type request struct {
	t  *apispec.Target
	op *apispec.Operation
	// bases: every replica's base URL; requests take them in turn.
	bases []string
	next  atomic.Uint64
	body  []byte // the operation's body, variant and patch applied
	// mark, when a downstream double runs, writes a key's token into its
	// request (Downstream.Mark): the URL and body to send.
	mark func(key, u string, h http.Header, body []byte) (string, []byte)
	// setups, for an operation with a setup:, binds each key's fresh
	// resource into its requests (nil: none).
	setups *setups
}

// target fills t for path p and key (empty for NoKey) at the next replica.
func (rq *request) target(t *vegeta.Target, p Path, key string) {
	rq.targetAt(t, rq.replica(), p, key)
}

// replica is the index of the replica the next request goes to: each in
// turn.
func (rq *request) replica() int {
	if len(rq.bases) == 1 {
		return 0
	}
	return int((rq.next.Add(1) - 1) % uint64(len(rq.bases)))
}

// targetAt fills t for the replica at index i.
func (rq *request) targetAt(t *vegeta.Target, i int, p Path, key string) {
	x := wire.Build(rq.t, rq.op, wire.Request{Key: key, NoKey: key == "", Body: rq.body, Base: rq.bases[i]}).Request
	x.URL, x.Body = rq.setups.bind(key, x.URL, x.Header, x.Body)
	if rq.mark != nil {
		x.URL, x.Body = rq.mark(key, x.URL, x.Header, x.Body)
	}
	vegetaTarget(t, x, p, key)
}

// vegetaTarget is the built request x as vegeta's target. The path and
// key ride in the URL fragment: net/http never sends a fragment, but
// vegeta keeps the URL in every Result, so results files stay
// classifiable after they are merged across machines.
func vegetaTarget(t *vegeta.Target, x wire.ExchangeRequest, p Path, key string) {
	t.Method, t.Header, t.Body = x.Method, x.Header, x.Body
	t.URL = x.URL + "#path=" + string(p)
	if key != "" {
		t.URL += "&key=" + url.QueryEscape(key)
	}
}

// Classify returns the path and key a result was sent with, from its URL
// fragment; ok is false for results idemcheck did not produce.
func Classify(r *vegeta.Result) (p Path, key string, ok bool) {
	_, frag, found := strings.Cut(r.URL, "#")
	if !found {
		return "", "", false
	}
	rest, found := strings.CutPrefix(frag, "path=")
	if !found {
		return "", "", false
	}
	path, esc, _ := strings.Cut(rest, "&key=")
	if path == "" {
		return "", "", false
	}
	if strings.ContainsAny(esc, "%+") {
		var err error
		if esc, err = url.QueryUnescape(esc); err != nil {
			return "", "", false
		}
	}
	return Path(path), esc, true
}

// targeter builds the vegeta Targeter for a mode. pool holds the warm keys
// (hit, mix); hot holds the contention keys; next numbers fresh keys and is
// shared by all phases so keys never repeat within a run.
func (rq *request) targeter(m Mode, hitRatio float64, pool, hot []string, keys *keySource) vegeta.Targeter {
	var n atomic.Uint64
	fresh := func(t *vegeta.Target) error {
		k, err := keys.new()
		if err != nil {
			return err
		}
		rq.target(t, Miss, k)
		return nil
	}
	// Pool and contention keys (and nokey's absent key) are sent over and
	// over: their targets are built once (header, URL per replica), as a
	// bare vegeta loop's fixed targets are, so sending one allocates
	// nothing.
	prepare := func(keys []string, p Path) [][]vegeta.Target {
		out := make([][]vegeta.Target, len(keys))
		for i, k := range keys {
			out[i] = make([]vegeta.Target, len(rq.bases))
			for j := range rq.bases {
				rq.targetAt(&out[i][j], j, p, k)
			}
		}
		return out
	}
	// The c-th pool request sends key c mod P to replica (c mod P + c div
	// P) mod R: each round over the pool moves every key on by one
	// replica, so a key is replayed by every replica in turn whatever P
	// and R are (taking both in turn would pin key i to replica i mod R
	// when R divides P: no cross-replica hit at all).
	fromPool := func(t *vegeta.Target, ts [][]vegeta.Target) {
		c := n.Add(1) - 1
		p := uint64(len(ts))
		byReplica := ts[c%p]
		*t = byReplica[(c%p+c/p)%uint64(len(byReplica))]
	}
	switch m {
	case ModeHit:
		ts := prepare(pool, Hit)
		return func(t *vegeta.Target) error { fromPool(t, ts); return nil }
	case ModeContention:
		ts := prepare(hot, Contention)
		return func(t *vegeta.Target) error { fromPool(t, ts); return nil }
	case ModeNoKey:
		// vegeta copies Target.Header into each request: one keyless
		// target per replica serves every request.
		ts := prepare([]string{""}, NoKey)[0]
		return func(t *vegeta.Target) error { *t = ts[rq.replica()]; return nil }
	case ModeMix:
		var i atomic.Uint64
		ts := prepare(pool, Hit)
		return func(t *vegeta.Target) error {
			// Request k is a hit when floor((k+1)r) > floor(kr): exactly
			// the ratio over any window, deterministic, no shared RNG.
			k := float64(i.Add(1) - 1)
			if uint64((k+1)*hitRatio) > uint64(k*hitRatio) {
				fromPool(t, ts)
				return nil
			}
			return fresh(t)
		}
	default:
		return fresh
	}
}

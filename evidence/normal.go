package evidence

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// ErrNotWorking marks a target that answers HTTP but whose normal request
// of some operation does not succeed (CheckNormal): every verdict drawn on
// it would be about the setup (a wrong base path, a body the API refuses,
// a double that answers what the API cannot use), not about idempotency.
// It is a kind of apispec.ErrUnreachable (errors.Is): every face stops with
// exit 4.
var ErrNotWorking = errors.New("the normal request does not succeed")

// notWorking is CheckNormal's error: one line per failing operation.
type notWorking struct{ lines []string }

func (e *notWorking) Error() string {
	return "the target answers, but " + ErrNotWorking.Error() + ", so nothing about idempotency can be judged (fix the setup, then run again):\n  " +
		strings.Join(e.lines, "\n  ")
}

func (e *notWorking) Is(err error) bool {
	return err == ErrNotWorking || err == apispec.ErrUnreachable
}

// probeKeyBase numbers the keys NormalKeys generates far above those a
// face numbers from 1 (load's phases, --hash-keys), so that a probe never
// uses a key the run later sends as fresh. Above it a probe's number is
// random: processes that share a seed (load's shards) would otherwise
// probe under one key at once and see each other in flight.
const probeKeyBase = 1 << 62

// NormalKeys are the keys CheckNormal sends under for a face that has no
// key strategy of its own (chaos, load): the target's generator, numbered
// apart from the face's, or server-issued keys.
func NormalKeys(t *apispec.Target, client *http.Client) *wire.Keys {
	gen := t.KeyGen
	if gen == nil {
		gen = apispec.UUIDKeys
	}
	return wire.KeysFrom(t, client, func(uint64) string { return gen(probeKeyBase + rand.Uint64N(probeKeyBase)) })
}

// CheckNormal sends the normal request of each of ops (nil: every
// operation of t) under a fresh key from keys, on every replica, and
// returns an ErrNotWorking error naming each one that did not get a 2xx:
// its status and an excerpt of its body and, when d (the run's double)
// runs, what the API called and what the double answered. Every face calls
// it after wire.Preflight and before any verdict.
func CheckNormal(ctx context.Context, t *apispec.Target, c wire.Carrier, d *Downstream, keys *wire.Keys, ops []*apispec.Operation) error {
	if ops == nil {
		for i := range t.Operations {
			ops = append(ops, &t.Operations[i])
		}
	}
	var lines []string
	for _, op := range ops {
		for _, base := range t.Bases() {
			if line := probeNormal(ctx, t, c, d, keys, op, base); line != "" {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &notWorking{lines: lines}
}

// timeoutFloor bounds a probe of a hand-built Target without a timeout.
const timeoutFloor = 5 * time.Second

// probeNormal sends op's normal request to base and returns "" when it
// succeeded, else the line that says what came back.
func probeNormal(ctx context.Context, t *apispec.Target, c wire.Carrier, d *Downstream, keys *wire.Keys, op *apispec.Operation, base string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*max(t.Timeout, timeoutFloor))
	defer cancel()
	k, err := keys.Next(ctx, nil)
	if err != nil {
		return fmt.Sprintf("%s: no key to send it with: %v", op.Name, err)
	}
	before := d.callsSoFar()
	x := c.Build(op, wire.Request{Label: "preflight: the normal request", Key: k, Base: base})
	if err := wire.WithFreshResource(ctx, c, t, op, 0, base, &x); err != nil {
		return err.Error() // a setup error, named in one line
	}
	x.Request.URL, x.Request.Body = d.Mark(op, k, x.Request.URL, x.Request.Header, x.Request.Body)
	r, _ := c.Do(ctx, x)
	if r.OK() {
		return ""
	}
	what := r.String()
	if r.Err == nil {
		what = "answered " + what
	}
	line := fmt.Sprintf("%s: %s %s%s %s", op.Name, op.Method, t.Redact(base), op.Path, t.Redact(what))
	if d.runs() {
		line += "; " + d.saw(before, r)
	}
	return line
}

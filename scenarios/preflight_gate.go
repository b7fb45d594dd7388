package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcheck/idemcheck/scenarios/double"
)

// ErrNotWorking marks a target that answers HTTP but whose normal request
// of some operation does not succeed (CheckNormal): every verdict drawn on
// it would be about the setup (a wrong base path, a body the API refuses,
// a double that answers what the API cannot use), not about idempotency.
// It is a kind of ErrUnreachable (errors.Is): every face stops with exit 4.
var ErrNotWorking = errors.New("the normal request does not succeed")

// notWorking is CheckNormal's error: one line per failing operation.
type notWorking struct{ lines []string }

func (e *notWorking) Error() string {
	return "the target answers, but " + ErrNotWorking.Error() + ", so nothing about idempotency can be judged (fix the setup, then run again):\n  " +
		strings.Join(e.lines, "\n  ")
}

func (e *notWorking) Is(target error) bool {
	return target == ErrNotWorking || target == ErrUnreachable
}

// probeKeyBase numbers the keys CheckNormal generates far above those a
// face numbers from 1 (load's phases, --hash-keys), so that a probe never
// uses a key the run later sends as fresh; probes counts them across
// calls (a seeded generator repeats a number's key).
const probeKeyBase = 1 << 62

var probes atomic.Uint64

// CheckNormal sends the normal request of each of ops (nil: every
// operation of t) under a fresh key, on every replica, and returns an
// ErrNotWorking error naming each one that did not get a 2xx: its status
// and an excerpt of its body and, when a downstream double runs, what the
// API called and what the double answered. Chaos and load call it after
// Preflight; Run does the same for the operations its instances send.
func CheckNormal(ctx context.Context, t *Target, client *http.Client, ops ...*Operation) error {
	gen := t.KeyGen
	if gen == nil {
		gen = UUIDKeys
	}
	keys := t.KeysFrom(client, func(uint64) string { return gen(probeKeyBase + probes.Add(1)) })
	return checkNormal(ctx, t, client, keys, ops)
}

func checkNormal(ctx context.Context, t *Target, client *http.Client, keys *Keys, ops []*Operation) error {
	if ops == nil {
		for i := range t.Operations {
			ops = append(ops, &t.Operations[i])
		}
	}
	var lines []string
	for _, op := range ops {
		for _, base := range t.Bases() {
			if line := probeNormal(ctx, t, client, keys, op, base); line != "" {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &notWorking{lines: lines}
}

// probeNormal sends op's normal request to base and returns "" when it
// succeeded, else the line that says what came back.
func probeNormal(ctx context.Context, t *Target, client *http.Client, keys *Keys, op *Operation, base string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*max(t.Timeout, timeoutFloor))
	defer cancel()
	e := &Env{Target: t, Op: op, client: client, keys: keys, ctx: ctx}
	k := e.NewKey()
	if err := e.keyError(); err != nil {
		return fmt.Sprintf("%s: no key to send it with: %v", op.Name, err)
	}
	srv := t.Double()
	var before int
	if srv != nil {
		before = srv.Totals().Calls
	}
	r := e.Send(ctx, Req{Label: "preflight: the normal request", Key: k, Base: base})
	if r.OK() {
		return ""
	}
	what := r.String()
	if r.Err == nil {
		what = "answered " + what
	}
	line := fmt.Sprintf("%s: %s %s%s %s", op.Name, op.Method, t.Redact(base), op.Path, t.Redact(what))
	if srv != nil {
		line += "; " + doubleSaw(srv, before, r)
	}
	return line
}

// timeoutFloor bounds a probe of a hand-built Target without a timeout.
const timeoutFloor = 5 * time.Second

// doubleSaw says what the API called at the double while the probe ran
// (the calls after the first before; nothing else runs then) and what the
// double answered: the route's configured answer, which no variant
// changes for a probe.
func doubleSaw(srv *double.Server, before int, r Resp) string {
	calls := srv.Journal("")
	if n := srv.Totals().Calls - before; n < len(calls) {
		calls = calls[len(calls)-max(n, 0):]
	}
	if len(calls) == 0 {
		return fmt.Sprintf("the API made no call to the double at %s", srv.URL())
	}
	routes := srv.Config().Routes
	var said []string
	for _, c := range calls {
		if c.Route == "" {
			said = append(said, fmt.Sprintf("the API called %s %s, which no route of the double matches (it answered 404)", c.Method, c.Path))
			continue
		}
		answer := fmt.Sprintf("%d", c.Status)
		if c.Hung {
			answer = "nothing (hung)"
		}
		for _, rt := range routes {
			if rt.Name == c.Route && len(rt.Response.Body) > 0 && !c.Hung {
				answer += " " + clipText(rt.Response.Body)
			}
		}
		said = append(said, fmt.Sprintf("the API called %s (%s %s); the double answered %s", c.Route, c.Method, c.Path, answer))
	}
	status := "gave no answer"
	if r.Err == nil {
		status = fmt.Sprintf("answered %d", r.Status)
	}
	return strings.Join(said, "; ") + " and the API " + status
}

// sentOps lists, in config order, the operations the runnable instances
// of ins send requests to (their own and their peers').
func sentOps(t *Target, ins []instance) []*Operation {
	used := map[string]bool{}
	for _, in := range ins {
		if in.Runnable() && in.op != nil {
			for _, op := range touched(t, in) {
				used[op.Name] = true
			}
		}
	}
	ops := []*Operation{}
	for i := range t.Operations {
		if used[t.Operations[i].Name] {
			ops = append(ops, &t.Operations[i])
		}
	}
	return ops
}

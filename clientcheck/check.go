package clientcheck

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// Defaults of Options.
const (
	// DefaultHold is how long the timeout fault holds an answer: a
	// client whose timeout is longer never times out there (inconclusive).
	DefaultHold = 10 * time.Second
	// DefaultBound is the most one case run may take.
	DefaultBound = 60 * time.Second
)

// Options configure one check of a client.
type Options struct {
	// Target and Profile: the operations the stand-in serves and how it
	// honours keys; nil: the reference's contract under ietf.
	Target  *apispec.Target
	Profile *apispec.Profile
	Driver  Driver
	// Subject names the client in the report (the command line).
	Subject string
	// Run selects cases by ID glob (doublestar); none: every case.
	Run []string
	// Strict: a SHOULD warning fails.
	Strict bool
	// AllowIncomplete lets a MUST without evidence pass.
	AllowIncomplete bool
	Hold, Bound     time.Duration
	// Progress, when set, hears each run's start.
	Progress func(run, caseID string)
}

// Check puts the client through the selected cases and judges it. The
// error is a setup error (*SetupError): the client could not be judged.
func Check(ctx context.Context, o Options) (*scenarios.Report, error) {
	if o.Target == nil {
		t, err := apispec.FromURL("http://stand-in", 0, 0)
		if err != nil {
			return nil, err
		}
		t.Operations = t.Operations[:1] // POST /v1/charges
		o.Target = t
	}
	if o.Profile == nil {
		p, err := apispec.ProfileByName(apispec.DefaultProfile)
		if err != nil {
			return nil, err
		}
		o.Profile = p
	}
	if o.Hold <= 0 {
		o.Hold = DefaultHold
	}
	if o.Bound <= 0 {
		o.Bound = DefaultBound
	}
	cases, leftOut, err := selectCases(o.Run)
	if err != nil {
		return nil, err
	}
	var newRun func(caseID string, plan Plan) (caseRun, error)
	protocol := "HTTP/1.1"
	// A target whose calls carry protobuf messages gets the gRPC stand-in.
	probe := wire.NewCarrier(o.Target, nil) // asked what it carries, never sent through
	probe.Close()
	if _, rpc := probe.(wire.Messages); rpc {
		g, err := newGRPCStandIn(o.Target, o.Profile, o.Hold)
		if err != nil {
			return nil, err
		}
		newRun, protocol = g.newRun, "gRPC"
	} else {
		srv, err := NewServer(o.Target, o.Profile, o.Hold)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		newRun = func(caseID string, plan Plan) (caseRun, error) { return srv.NewRun(caseID, plan), nil }
	}

	rep := &scenarios.Report{Target: "client: " + o.Subject, Profile: o.Profile.Name, Protocol: protocol,
		Strict: o.Strict, AllowIncomplete: o.AllowIncomplete, Started: time.Now().UTC(), LeftOut: leftOut, Client: true}
	in := input{runs: map[string]*outcome{}, profile: o.Profile}
	token := "tok_" + randomHex(8)
	for _, rp := range runPlans {
		caseID := ""
		for _, c := range cases {
			if slices.Contains(c.Runs, rp.name) {
				caseID = c.ID
				break
			}
		}
		if caseID == "" {
			continue
		}
		if o.Progress != nil {
			o.Progress(rp.name, caseID)
		}
		out, err := drive(ctx, newRun, o, rp.name, caseID, rp.plan, token)
		if err != nil {
			return nil, err
		}
		in.runs[rp.name] = out
		in.all = append(in.all, out)
	}
	for _, c := range cases {
		start := time.Now()
		v := c.judge(in)
		res := scenarios.Result{Meta: c.Meta, Status: v.status, Expected: v.expected, Observed: v.observed, Reason: v.reason}
		if v.status == scenarios.Pass {
			res.Reason = ""
		}
		shows := v.show
		if shows == nil {
			for _, name := range c.Runs {
				if r := in.runs[name]; r != nil {
					for _, a := range r.Journal.Attempts {
						shows = append(shows, shown{r, a})
					}
				}
			}
		}
		for _, s := range shows {
			res.Exchanges = append(res.Exchanges, exchange(s))
		}
		res.Duration = time.Since(start)
		rep.Results = append(rep.Results, res)
	}
	rep.Duration = time.Since(rep.Started)
	return rep, nil
}

// selectCases applies --run; the MUST cases it leaves out make the run
// claim no level.
func selectCases(globs []string) (cases []Case, leftOut []string, err error) {
	for _, g := range globs {
		if !doublestar.ValidatePattern(g) {
			return nil, nil, setupErrorf(2, "--run %q: not a valid glob", g)
		}
	}
	for _, c := range Catalog() {
		in := len(globs) == 0
		for _, g := range globs {
			if ok, _ := doublestar.Match(g, c.ID); ok {
				in = true
			}
		}
		switch {
		case in:
			cases = append(cases, c)
		case c.Level == scenarios.Must:
			leftOut = append(leftOut, c.ID)
		}
	}
	if len(cases) == 0 {
		return nil, nil, setupErrorf(2, "--run %s matches no client case (see idemcheck client --list)", strings.Join(globs, ","))
	}
	return cases, leftOut, nil
}

// drive makes one case run and tells apart a client that could not be
// judged (a setup error) from one that behaved.
func drive(ctx context.Context, newRun func(string, Plan) (caseRun, error), o Options, name, caseID string, plan Plan, token string) (*outcome, error) {
	run, err := newRun(name, plan)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	rctx, cancel := context.WithTimeout(ctx, o.Bound)
	defer cancel()
	stopped := make(chan bool, 1)
	go func() {
		select {
		case <-run.Overflow():
			stopped <- true
			cancel()
		case <-rctx.Done():
			stopped <- false
		}
	}()
	env := Env{BaseURL: run.BaseURL(), Calls: plan.Calls, Parallel: plan.Parallel, Token: token, Case: caseID}
	x, err := o.Driver.Drive(rctx, env)
	cancel()
	wasStopped := <-stopped
	if err != nil {
		return nil, setupErrorf(2, "the client command cannot start: %v", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	j := run.Journal()
	out := &outcome{Name: name, Base: env.BaseURL, Journal: j, Exit: x, Stopped: wasStopped}
	switch {
	case len(j.Attempts) == 0 && len(j.Stray) > 0:
		s := j.Stray[0]
		return nil, setupErrorf(4, "case %s: the client called only %s %s, which is no operation of the stand-in's config (it serves %s)",
			caseID, s.Method, strings.TrimSpace(s.Path), served(o.Target))
	case len(j.Attempts) == 0 && x.Killed:
		return nil, setupErrorf(4, "case %s: the client did not exit within %s and never called the stand-in at IDEMCHECK_BASE_URL", caseID, o.Bound)
	case len(j.Attempts) == 0:
		return nil, setupErrorf(4, "case %s: the client exited %d without calling the stand-in at IDEMCHECK_BASE_URL%s", caseID, x.Code, stderrNote(x))
	case x.Killed && !wasStopped:
		return nil, setupErrorf(4, "case %s: the client did not exit within %s (--case-timeout) after %d requests", caseID, o.Bound, len(j.Attempts))
	}
	return out, nil
}

func served(t *apispec.Target) string {
	var s []string
	for _, op := range t.Operations {
		s = append(s, op.Method+" "+op.Path)
	}
	return strings.Join(s, ", ")
}

// exchange shows an attempt as the reports show exchanges.
func exchange(s shown) wire.Exchange {
	a := s.at
	label := fmt.Sprintf("run %s attempt %d (connection %d, %s)", s.run.Name, a.N, a.Conn, quoteKey(a))
	x := wire.Exchange{
		Label:   label,
		Request: wire.ExchangeRequest{Method: a.Method, URL: s.run.Base + a.Path, Header: a.Header, Body: a.Body},
		Error:   a.Fault,
		Start:   a.Start,
	}
	if !a.End.IsZero() {
		x.Duration = a.End.Sub(a.Start)
	}
	if a.Status != 0 {
		x.Response = &wire.ExchangeResponse{Status: a.Status, Header: a.RespHeader, Body: a.RespBody}
	}
	return x
}

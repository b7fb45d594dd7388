package idemchecktest

import (
	"context"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/clientcheck"
)

// ClientConfig says what Client's stand-in serves.
type ClientConfig struct {
	// Config is a YAML config: the operations the stand-in serves, its
	// key field and profile; empty: the reference's POST /v1/charges
	// under ietf.
	Config string
	// Profile is a preset replacing the config's (empty: the config's,
	// else ietf).
	Profile string
	// Hold bounds how long the timeout case holds its answer
	// (clientcheck.DefaultHold when zero): a client whose timeout is
	// longer makes that case inconclusive.
	Hold time.Duration
}

// Client checks the client side of the contract, one subtest per client
// case (docs/clients.md), the way slogtest checks a handler: call makes
// one logical call through the client under test against baseURL (its
// base URL: the operation's path is appended to it) and returns the
// created resource's id, or an error when the call failed. Client calls
// it once per call a case asks for, concurrently for the parallel case;
// give it one client object shared across calls, as an application does.
//
//	func TestSDKIdempotency(t *testing.T) {
//		idemchecktest.Client(t, idemchecktest.ClientConfig{}, func(ctx context.Context, base string) (string, error) {
//			c := sdk.New(base)
//			ch, err := c.Charges.Create(ctx, sdk.ChargeParams{Amount: 1000, Currency: "usd"})
//			return ch.ID, err
//		})
//	}
//
// Strict, AllowIncomplete, Only, WithProfile and OnReport apply as for
// Run.
func Client(t *testing.T, cfg ClientConfig, call func(ctx context.Context, baseURL string) (string, error), opts ...Option) {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var tgt *apispec.Target
	profile := o.profile
	var err error
	switch {
	case cfg.Config != "":
		var p *apispec.Profile
		tgt, p, err = apispec.LoadConfigPreset(cfg.Config, cfg.Profile)
		if profile == nil {
			profile = p
		}
	case cfg.Profile != "" && profile == nil:
		profile, err = apispec.ProfileByName(cfg.Profile)
	}
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	rep, err := clientcheck.Check(t.Context(), clientcheck.Options{
		Target: tgt, Profile: profile, Driver: clientcheck.Func(call), Subject: t.Name(),
		Run: o.run.Run, Strict: o.run.Strict, AllowIncomplete: o.allowIncomplete, Hold: cfg.Hold,
	})
	if err != nil {
		t.Fatalf("idemcheck: %v", err)
	}
	for _, r := range rep.Results {
		t.Run(r.ID, func(t *testing.T) {
			d := Decide(rep, r)
			switch {
			case d.Fail:
				t.Error(d.Text)
			case d.Skip:
				t.Skip(d.Text)
			case d.Text != "":
				t.Log(d.Text)
			}
		})
	}
	if o.onReport != nil {
		o.onReport(rep)
	}
}

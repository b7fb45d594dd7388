package scenarios

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// ErrNoTarget: neither a config, a target URL nor a target command was given.
var ErrNoTarget = errors.New("give --config FILE or --target URL (or --target-cmd CMD)")

// Selection is how a front end (the CLI, the Ginkgo suite) names what to
// test: a YAML config, the URL of a server that follows the reference
// app's contract, or a command that starts one.
type Selection struct {
	Config string // YAML config file
	Target string // base URL of a reference-contract server
	// Profile, when set, replaces the config's preset; the config's
	// profile.overrides still apply on top (they say what the API is, e.g.
	// key_max_len). With --target it picks the preset. The key syntax the
	// target was configured with is kept.
	Profile string
	// TTL and Lease, when positive, override what the target declares.
	TTL, Lease time.Duration
	// TargetCmd, when set, is the command the harness starts (and the LEASE
	// crash case kills and restarts) as the target; alone it implies the
	// reference contract on the port it substitutes for {port}.
	TargetCmd string
	// Replicas, when set, are more replicas of the same API beside the
	// base URL (--replica); they replace the config's replicas. With
	// --target the reference contract's oracle is read on each replica and
	// summed.
	Replicas []string
	// BaseURL, when set, replaces the config's base_url (one config, many
	// environments).
	BaseURL string
	// TLS fields that are set override the config's tls: ones.
	TLS apispec.TLS
	// HashKeys makes client-generated keys business-id hashes of KeySeed
	// (HashKeys); an empty seed is replaced by a fresh one.
	HashKeys bool
	KeySeed  string
	// HTTP2 speaks HTTP/2 only (--http2): h2 by ALPN over TLS, h2c with
	// prior knowledge over plain TCP; a config's http2: true does too.
	HTTP2 bool
}

// Load resolves the selection. Errors are one line naming the flag, file
// or field at fault; ErrNoTarget when neither Config nor Target is set.
func (s Selection) Load() (*apispec.Target, *apispec.Profile, error) {
	var (
		t   *apispec.Target
		p   *apispec.Profile
		err error
	)
	switch {
	case s.Config != "" && s.Target != "":
		return nil, nil, errors.New("give either --config or --target, not both")
	case s.Config != "":
		f, err := apispec.ReadFile(s.Config)
		if err != nil {
			return nil, nil, err
		}
		f.Command = s.TargetCmd
		if t, p, err = f.Load(s.Profile, s.BaseURL); err != nil {
			return nil, nil, err
		}
	case s.Target != "":
		if t, err = apispec.FromURL(s.Target, s.TTL, s.Lease); err != nil {
			return nil, nil, err
		}
	case s.TargetCmd != "":
		if t, err = apispec.FromCommand(s.TargetCmd, s.TTL, s.Lease); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, ErrNoTarget
	}
	if p == nil {
		if p, err = apispec.ProfileByName(s.Profile); err != nil {
			return nil, nil, fmt.Errorf("--profile: %v", err)
		}
		t.Judge(p) // a gRPC preset judging an HTTP target
	}
	if s.TTL < 0 {
		return nil, nil, fmt.Errorf("--ttl %s: must not be negative", s.TTL)
	}
	if s.Lease < 0 {
		return nil, nil, fmt.Errorf("--lease %s: must not be negative", s.Lease)
	}
	if s.TargetCmd != "" {
		if _, err := apispec.SplitCommand(s.TargetCmd); err != nil {
			return nil, nil, fmt.Errorf("--target-cmd %q: %v", s.TargetCmd, err)
		}
		t.Command = s.TargetCmd
	}
	if len(s.Replicas) > 0 {
		if err := t.AddReplicas(s.Replicas, s.Config == ""); err != nil {
			return nil, nil, err
		}
	}
	if s.TTL > 0 {
		t.TTL = s.TTL
	}
	if err := s.reach(t); err != nil {
		return nil, nil, err
	}
	if s.Lease > 0 {
		t.Lease = s.Lease
	}
	if p.KeyFormat != "" {
		// Every face's client-generated keys obey the API's key format:
		// --hash-keys hashes and the defaults (UUIDs; load's sequence keys
		// would be refused by a UUID-only API) alike.
		gen := t.KeyGen
		if gen == nil {
			gen = apispec.UUIDKeys
		}
		t.KeyGen = p.ShapedKeys(gen)
	}
	return t, p, nil
}

// reach applies --base-url, the TLS flags, --http2 and --hash-keys.
func (s Selection) reach(t *apispec.Target) error {
	if s.BaseURL != "" {
		if err := t.Rebase(s.BaseURL); err != nil {
			return err
		}
	}
	o := t.TLS
	if s.TLS.CACert != "" {
		o.CACert = s.TLS.CACert
	}
	if s.TLS.InsecureSkipVerify {
		o.InsecureSkipVerify = true
	}
	if s.TLS.ClientCert != "" || s.TLS.ClientKey != "" {
		o.ClientCert, o.ClientKey = s.TLS.ClientCert, s.TLS.ClientKey
	}
	if err := t.SetTLS(o); err != nil {
		return fmt.Errorf("--%s", strings.ReplaceAll(err.Error(), "_", "-"))
	}
	t.HTTP2 = t.HTTP2 || s.HTTP2
	switch {
	case s.HashKeys:
		seed := s.KeySeed
		if seed == "" {
			seed = fmt.Sprintf("run-%d", time.Now().UnixNano())
		}
		t.KeyGen, t.KeySeed = apispec.HashKeys(seed), seed
	case s.KeySeed != "":
		return errors.New("--key-seed needs --hash-keys")
	}
	return nil
}

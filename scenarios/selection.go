package scenarios

import (
	"errors"
	"fmt"
	"time"
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
}

// Load resolves the selection. Errors are one line naming the flag, file
// or field at fault; ErrNoTarget when neither Config nor Target is set.
func (s Selection) Load() (*Target, *Profile, error) {
	var (
		t   *Target
		p   *Profile
		err error
	)
	switch {
	case s.Config != "" && s.Target != "":
		return nil, nil, errors.New("give either --config or --target, not both")
	case s.Config != "":
		if t, p, err = LoadConfigPreset(s.Config, s.Profile); err != nil {
			return nil, nil, err
		}
	case s.Target != "":
		if t, err = FromURL(s.Target, s.TTL, s.Lease); err != nil {
			return nil, nil, err
		}
	case s.TargetCmd != "":
		if t, err = FromCommand(s.TargetCmd, s.TTL, s.Lease); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, ErrNoTarget
	}
	if p == nil {
		if p, err = ProfileByName(s.Profile); err != nil {
			return nil, nil, fmt.Errorf("--profile: %v", err)
		}
	}
	if s.TTL < 0 || s.Lease < 0 {
		return nil, nil, fmt.Errorf("--ttl %s / --lease %s: must not be negative", s.TTL, s.Lease)
	}
	if s.TargetCmd != "" {
		if _, err := SplitCommand(s.TargetCmd); err != nil {
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
	if s.Lease > 0 {
		t.Lease = s.Lease
	}
	return t, p, nil
}

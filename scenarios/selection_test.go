package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestSelectionLoad: each way of naming a target, the overrides that apply
// to all of them, and the one-line errors that name the flag at fault.
func TestSelectionLoad(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
	yaml := "base_url: http://127.0.0.1:8080\nprincipals: [{name: a, headers: {Authorization: Bearer a}}]\nprofile: {preset: stripe, overrides: {key_max_len: 64}}\nttl: 1m\noperations: [{name: c, method: POST, path: /c, body: {a: 1}}]\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		sel     Selection
		wantErr string // "" for success
		check   func(*apispec.Target, *apispec.Profile) string
	}{
		{name: "nothing selected", sel: Selection{}, wantErr: ErrNoTarget.Error()},
		{name: "config and target", sel: Selection{Config: cfg, Target: "http://127.0.0.1:1"}, wantErr: "not both"},
		{name: "bad target URL", sel: Selection{Target: "127.0.0.1:1"}, wantErr: "--target"},
		{name: "unknown profile", sel: Selection{Target: "http://127.0.0.1:1", Profile: "nope"}, wantErr: "--profile"},
		{name: "unknown profile with a config", sel: Selection{Config: cfg, Profile: "nope"}, wantErr: "--profile: unknown profile"},
		{name: "negative TTL", sel: Selection{Target: "http://127.0.0.1:1", TTL: -time.Second}, wantErr: "must not be negative"},
		{name: "unbalanced target command", sel: Selection{TargetCmd: `serve "x`}, wantErr: "--target-cmd"},
		{name: "target uses the default profile", sel: Selection{Target: "http://127.0.0.1:1"}, check: func(tg *apispec.Target, p *apispec.Profile) string {
			if p.Name != apispec.DefaultProfile || tg.BaseURL != "http://127.0.0.1:1" {
				return "want the default profile on the given URL"
			}
			return ""
		}},
		{name: "config keeps its profile and TTL", sel: Selection{Config: cfg}, check: func(tg *apispec.Target, p *apispec.Profile) string {
			if p.Name != "stripe" || tg.TTL != time.Minute {
				return "want the config's stripe profile and 1m TTL"
			}
			return ""
		}},
		{name: "flags override the config", sel: Selection{Config: cfg, Profile: "lenient", TTL: time.Hour, Lease: 2 * time.Second}, check: func(tg *apispec.Target, p *apispec.Profile) string {
			if p.Name != "lenient" || tg.TTL != time.Hour || tg.Lease != 2*time.Second || p.KeyMaxLen != 64 {
				return "want profile lenient with the config's key_max_len 64 override, TTL 1h, lease 2s"
			}
			return ""
		}},
		{name: "target command alone", sel: Selection{TargetCmd: "idemcheck serve --addr 127.0.0.1:{port}"}, check: func(tg *apispec.Target, p *apispec.Profile) string {
			if tg.Command != "idemcheck serve --addr 127.0.0.1:{port}" {
				return "want the command kept on the target"
			}
			return ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg, p, err := c.sel.Load()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Load() error = %v, want one line containing %q", err, c.wantErr)
				}
				if c.wantErr == ErrNoTarget.Error() && !errors.Is(err, ErrNoTarget) {
					t.Fatalf("Load() error = %v, want ErrNoTarget", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load(): %v", err)
			}
			if msg := c.check(tg, p); msg != "" {
				t.Errorf("%s; got profile %q, target %+v", msg, p.Name, tg)
			}
		})
	}
}

package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/internal/knobless"
	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
)

// serveShop starts the knob-less orders API (internal/knobless): its
// provider is the double, or any URL o names.
func serveShop(t *testing.T, o knobless.Options) string {
	t.Helper()
	shop := knobless.New(o)
	srv := httptest.NewServer(shop)
	t.Cleanup(func() {
		srv.Close()
		_ = shop.Close()
	})
	return srv.URL
}

// downstreamOracle counts executions as the double's payments calls.
const downstreamOracle = "{downstream: payments}"

// runKnobless runs the catalog (args select cases) against the shop
// through `idemcheck run` with the in-process double; it returns the
// results by case ID and the run's note lines.
func runKnobless(t *testing.T, cfg string, args ...string) (cliRun, map[string]runResult, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r, results := runReport(t, append([]string{"--config", path}, args...)...)
	byID := map[string]runResult{}
	for _, res := range results {
		byID[res.ID] = res
	}
	var notes []string
	for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.Contains(l, "note:") {
			notes = append(notes, l)
		}
	}
	return r, byID, notes
}

// TestDoubleRun: an API without knobs, its provider pointed at the
// double. The correct build passes every MUST on the double's per-key
// counts, the slow variant made slow by the double; a build that executes
// a key twice is caught.
func TestDoubleRun(t *testing.T) {
	// On a loaded machine an overlap may be missed: such a case says
	// inconclusive (and a MUST among them makes the exit 5), never a
	// wrong verdict; the assertions allow that and nothing else.
	t.Run("correct", func(t *testing.T) {
		addr := testenv.FreeAddr(t)
		base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr})
		r, res, notes := runKnobless(t, knobless.Config(base, addr, downstreamOracle))
		if r.code != exitOK && r.code != exitIncomplete {
			t.Fatalf("exit %d, want 0; notes %q; stderr %s", r.code, notes, r.stderr)
		}
		if len(notes) != 0 {
			t.Errorf("notes %q: want none (every call holds its key's token)", notes)
		}
		for id, x := range res {
			if x.Status == "fail" || x.Status == "warn" || x.Status == "unverifiable" {
				t.Errorf("%s: %s %q %s, want no fail, no warn and evidence for every case", id, x.Status, x.Observed, x.Reason)
			}
		}
		// Each needs the double: a provider call it held (slow), failed
		// (business, transient) or counted without a key. The first two
		// need an overlap; the others are decided whatever the load.
		for id, tc := range map[string]struct {
			observed string
			overlap  bool
		}{
			"concurrent/in-flight-conflict": {"1 executions (oracle)", true},
			"concurrent/same-key-burst":     {"1 executions (oracle)", true},
			"errors/business-error-kept":    {"402, retry 402", false},
			"errors/failure-releases-key":   {"2 executions (oracle)", false},
			"missing/rejected":              {"no execution (oracle)", false},
			"replay/single-execution":       {"1 execution over", false},
		} {
			x := res[id]
			if tc.overlap && x.Status == "inconclusive" {
				continue
			}
			if x.Status != "pass" || !strings.Contains(x.Observed, tc.observed) {
				t.Errorf("%s: %s %q %s, want pass with %q", id, x.Status, x.Observed, x.Reason, tc.observed)
			}
		}
	})
	t.Run("executes-twice", func(t *testing.T) {
		addr := testenv.FreeAddr(t)
		base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, Defects: []reference.Defect{reference.NoInflightLock}})
		r, res, _ := runKnobless(t, knobless.Config(base, addr, downstreamOracle), "--run", "concurrent/**")
		for _, id := range []string{"concurrent/in-flight-conflict", "concurrent/same-key-burst"} {
			if x := res[id]; x.Status == "pass" {
				t.Errorf("%s passed on a build that executes a key twice: %q", id, x.Observed)
			}
		}
		if r.code == exitIncomplete {
			t.Skip("every catching case was inconclusive (a loaded machine)")
		}
		if r.code != exitFail {
			t.Fatalf("exit %d, want 1; stderr %s", r.code, r.stderr)
		}
		// The evidence times the key's provider calls.
		if !strings.Contains(r.stdout, "downstream payments: ") || !strings.Contains(r.stdout, " calls for key …") {
			t.Errorf("no downstream evidence in the failures:\n%s", r.stdout)
		}
	})
}

// TestDoubleCalibration: calibration says what it saw when the calls do
// not hold the key's token: none at all (the API's provider URL is not
// the double), or calls without it (counted globally, the run serial).
func TestDoubleCalibration(t *testing.T) {
	t.Run("untokened", func(t *testing.T) {
		addr := testenv.FreeAddr(t)
		base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, KeepsReference: true})
		r, res, notes := runKnobless(t, knobless.Config(base, addr, downstreamOracle), "--run", "replay/single-execution", "--run", "concurrent/same-key-burst")
		if len(notes) != 1 || !strings.Contains(notes[0], "holds no token") || !strings.Contains(notes[0], "the run is serial") {
			t.Errorf("notes %q: want one saying the calls hold no token and the run is serial", notes)
		}
		for _, id := range []string{"replay/single-execution", "concurrent/same-key-burst"} {
			x := res[id]
			if x.Status == "inconclusive" && id == "concurrent/same-key-burst" {
				continue // a burst a loaded machine could not overlap
			}
			if x.Status != "pass" || !strings.Contains(x.Observed, "(oracle)") {
				t.Errorf("%s: %+v, want pass on the global count", id, x)
			}
		}
		if r.code != exitOK && r.code != exitIncomplete {
			t.Errorf("exit %d, want 0; stderr %s", r.code, r.stderr)
		}
	})
	t.Run("not-pointed", func(t *testing.T) {
		elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"pay_x"}`))
		}))
		defer elsewhere.Close()
		addr := testenv.FreeAddr(t)
		base := serveShop(t, knobless.Options{ProviderURL: elsewhere.URL})
		_, res, notes := runKnobless(t, knobless.Config(base, addr, downstreamOracle), "--run", "replay/single-execution")
		if len(notes) != 1 || !strings.Contains(notes[0], "made no call to the double at http://"+addr) {
			t.Errorf("notes %q: want one saying no call reached the double", notes)
		}
		if x := res["replay/single-execution"]; x.Status != "inconclusive" {
			t.Errorf("replay/single-execution: %+v, want inconclusive", x)
		}
	})
}

// TestDoubleChaosLoad: chaos and load start the config's double too and
// count with it: the correct shop shows no violation, each key's
// executions read from the double; a shop that executes a same-key burst
// many times is caught by chaos.
func TestDoubleChaosLoad(t *testing.T) {
	addr := testenv.FreeAddr(t)
	base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr})
	cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(cfg, []byte(knobless.Config(base, addr, downstreamOracle)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := runCLI(t, "chaos", "--config", cfg, "--ops", "60", "--fault", "drop-response:0.3", "--history", filepath.Join(dir, "h.jsonl"))
	if r.code != exitOK {
		t.Fatalf("chaos: exit %d; stdout %s; stderr %s", r.code, r.stdout, r.stderr)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "h.jsonl"))
	if err != nil || !strings.Contains(string(hist), `"oracle":1`) {
		t.Errorf("chaos history: no operation counted by the double (%v)", err)
	}
	r = runCLI(t, "load", "--config", cfg, "--mode", "mix", "--rate", "100", "--duration", "1s", "--json", filepath.Join(dir, "load.json"))
	if r.code != exitOK {
		t.Fatalf("load: exit %d; stderr %s", r.code, r.stderr)
	}
	doc := readJSON(t, filepath.Join(dir, "load.json"))
	if o, _ := doc["oracle"].(map[string]any); o["available"] != true || o["error"] != nil || o["keys_probed"].(float64) == 0 {
		t.Errorf("load oracle %v: want the double's counts, keys probed", doc["oracle"])
	}

	broken := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, Defects: []reference.Defect{reference.CheckThenInsert}})
	bcfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
	if err := os.WriteFile(bcfg, []byte(knobless.Config(broken, addr, downstreamOracle)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, "chaos", "--config", bcfg, "--ops", "40", "--fault", "duplicate:p=1,mode=concurrent")
	if r.code != exitFail || !strings.Contains(r.stdout, "double-execution") || !strings.Contains(r.stdout, "oracle=2") {
		t.Errorf("chaos on a check-then-insert shop: exit %d, want 1 with double executions the double counted; stdout %s; stderr %s", r.code, r.stdout, r.stderr)
	}
}

// TestDoubleKeyLines: requests sent with raw key field lines (two
// Idempotency-Key lines) carry a token of their own, so the executions of
// a shop that accepts them are counted (the first line's key executes
// once, then replays: deterministic, a pass). Unmarked, their provider
// calls held no token and read as 0 executions after two 201s.
func TestDoubleKeyLines(t *testing.T) {
	addr := testenv.FreeAddr(t)
	base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, Defects: []reference.Defect{reference.UnvalidatedKey}})
	_, res, _ := runKnobless(t, knobless.Config(base, addr, downstreamOracle), "--run", "syntax/repeated-header")
	x := res["syntax/repeated-header"]
	if want := "201 then 201, 1 executions (oracle)"; strings.Count(x.Observed, want) != 2 {
		t.Errorf("syntax/repeated-header on a shop accepting two key lines: %s %q %s, want %q for both forms", x.Status, x.Observed, x.Reason, want)
	}
}

// TestDoubleManagedTarget: a target_cmd gets the double's URL as
// {downstream}, so a managed API needs no fixed provider port (listen
// picks a free one).
func TestDoubleManagedTarget(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "knobless")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/idemcheck/idemcheck/internal/knobless/cmd/knobless").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	cfg := knobless.Config("http://127.0.0.1:1", "127.0.0.1:0", downstreamOracle)
	cfg = strings.Replace(cfg, "base_url: http://127.0.0.1:1\n", "target_cmd: "+bin+" --addr 127.0.0.1:{port} --provider {downstream}\n", 1)
	r, res, notes := runKnobless(t, cfg, "--run", "replay/single-execution")
	if x := res["replay/single-execution"]; x.Status != "pass" || !strings.Contains(x.Observed, "(oracle)") || len(notes) != 0 {
		t.Errorf("replay/single-execution: %+v, notes %q, exit %d, stderr %s: want a pass counted by the double", x, notes, r.code, r.stderr)
	}
}

// TestDoubleWitnessesKeyless: beside a per-key oracle that cannot count a
// request without a key (here the shop's effects endpoint, as a per-key
// SQL query), the double, once calibration saw it called with the key's
// token, counts the keyless requests' executions: missing/rejected is
// decided instead of unverifiable. (Calibration checks the operations the
// selected effect-counting cases use: replay/single-execution here.)
func TestDoubleWitnessesKeyless(t *testing.T) {
	const effects = `{url: "/v1/effects?key={key}", pointer: /executions}`
	addr := testenv.FreeAddr(t)
	base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, Effects: true})
	_, res, notes := runKnobless(t, knobless.Config(base, addr, effects), "--run", "missing/rejected", "--run", "replay/single-execution")
	if x := res["missing/rejected"]; x.Status != "pass" || !strings.Contains(x.Observed, "no execution (oracle)") {
		t.Errorf("missing/rejected %s %q %s (notes %q), want a pass counted by the double", x.Status, x.Observed, x.Reason, notes)
	}
}

// TestDoubleForwardedKey: an API that forwards the client's key to its
// provider needs no marker: the double tracks the keys themselves, counts
// by them and makes the slow variant slow by them.
func TestDoubleForwardedKey(t *testing.T) {
	addr := testenv.FreeAddr(t)
	base := serveShop(t, knobless.Options{ProviderURL: "http://" + addr, ForwardsKey: true})
	cfg := strings.Replace(knobless.Config(base, addr, downstreamOracle), "    marker: /reference\n", "", 1)
	_, res, notes := runKnobless(t, cfg, "--run", "replay/single-execution", "--run", "concurrent/in-flight-conflict")
	for _, id := range []string{"replay/single-execution", "concurrent/in-flight-conflict"} {
		x := res[id]
		if x.Status == "inconclusive" && id == "concurrent/in-flight-conflict" {
			continue // an overlap a loaded machine could not make
		}
		if x.Status != "pass" || !strings.Contains(x.Observed, "(oracle)") {
			t.Errorf("%s: %s %q %s (notes %q), want a pass counted by the forwarded key", id, x.Status, x.Observed, x.Reason, notes)
		}
	}
}

// TestDoubleChaosLoadCalibration: chaos and load check the double as run
// does before counting with it: an API not pointed at it leaves its counts
// unused (one note, no false violation: a per-key count of 0 would have
// read as a missed execution), and calls without a token are counted
// globally (load's totals), never per key.
func TestDoubleChaosLoadCalibration(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"pay_x"}`))
	}))
	defer elsewhere.Close()
	for _, tc := range []struct {
		name       string
		shop       knobless.Options
		note, line string
	}{
		{"not-pointed", knobless.Options{ProviderURL: elsewhere.URL}, "made no call to the double", "oracle: not used"},
		{"untokened", knobless.Options{KeepsReference: true}, "holds no token", "executions in the window"},
	} {
		addr := testenv.FreeAddr(t)
		if tc.shop.ProviderURL == "" {
			tc.shop.ProviderURL = "http://" + addr
		}
		base := serveShop(t, tc.shop)
		cfg := filepath.Join(t.TempDir(), "idemcheck.yaml")
		if err := os.WriteFile(cfg, []byte(knobless.Config(base, addr, downstreamOracle)), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "chaos", "--config", cfg, "--ops", "30", "--fault", "drop-response:0.3")
		if r.code != exitOK || !strings.Contains(r.stdout, "note: downstream payments: ") || !strings.Contains(r.stdout, tc.note) {
			t.Errorf("%s: chaos exit %d, want 0 with a note %q; stdout %s; stderr %s", tc.name, r.code, tc.note, r.stdout, r.stderr)
		}
		r = runCLI(t, "load", "--config", cfg, "--mode", "mix", "--rate", "100", "--duration", "1s")
		if r.code != exitOK || !strings.Contains(r.stdout, tc.line) || !strings.Contains(r.stdout, tc.note) {
			t.Errorf("%s: load exit %d, want 0 with %q and %q; stdout %s; stderr %s", tc.name, r.code, tc.line, tc.note, r.stdout, r.stderr)
		}
	}
}

// TestLoadManagedTarget: load starts a target_cmd as run and chaos do
// (its base_url was a {port} template load could not reach, exit 4), and
// the double counts the started API's executions: each miss key once.
func TestLoadManagedTarget(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "knobless")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/idemcheck/idemcheck/internal/knobless/cmd/knobless").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	cfg := knobless.Config("http://127.0.0.1:1", "127.0.0.1:0", downstreamOracle)
	cfg = strings.Replace(cfg, "base_url: http://127.0.0.1:1\n", "target_cmd: "+bin+" --addr 127.0.0.1:{port} --provider {downstream}\n", 1)
	out := filepath.Join(t.TempDir(), "load.json")
	code, stderr := runCaptured(t, "load", "--config", writeTemp(t, "shop.yaml", cfg), "--mode", "miss", "--rate", "20", "--duration", "1s", "--json", out)
	if code != exitOK {
		t.Fatalf("load on a managed target: exit %d, want 0: %s", code, stderr)
	}
	oracle, _ := readJSON(t, out)["oracle"].(map[string]any)
	if probed, _ := oracle["keys_probed"].(float64); oracle["available"] != true || probed == 0 {
		t.Errorf("oracle %v: want the double's counts of the started API", oracle)
	}
}

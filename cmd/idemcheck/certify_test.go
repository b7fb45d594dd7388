package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/demotest"
	"github.com/idemcheck/idemcheck/reference/demo"
)

// certifyTTL is long enough for every case of the catalog to run (the
// expiry and in-flight cases skip under a shorter one).
const certifyTTL = 10 * time.Second

// certifyConfig is examples/reference.yaml aimed at url with certifyTTL.
func certifyConfig(t *testing.T, url string) string {
	t.Helper()
	b, err := os.ReadFile(referenceConfig(t, url))
	if err != nil {
		t.Fatal(err)
	}
	ttl := regexp.MustCompile(`(?m)^ttl: \S+`)
	if !ttl.Match(b) {
		t.Fatal("examples/reference.yaml declares no ttl")
	}
	return writeTemp(t, "api.yaml", ttl.ReplaceAllString(string(b), "ttl: "+certifyTTL.String()))
}

// runLevel reads a JSON report's conformance.
func runLevel(t *testing.T, path string) (level, blocker, why string) {
	t.Helper()
	c, _ := readJSON(t, path)["conformance"].(map[string]any)
	level, _ = c["level"].(string)
	blocker, _ = c["blocker"].(string)
	why, _ = c["why"].(string)
	return level, blocker, why
}

// TestCertifyReference: the correct reference reaches draft-07 core (a
// stall on a loaded machine may leave a MUST without evidence: then no
// level, never a wrong one); its attestation verifies against its report
// and config, and stops verifying when one verdict of the report or one
// byte of the config changes. The defective reference is not conformant,
// its attestation FAILED and its badge red.
func TestCertifyReference(t *testing.T) {
	dir := t.TempDir()
	good := demotest.Serve(t, demo.Options{TTL: certifyTTL})
	cfg := certifyConfig(t, good)
	rep, att, badge := filepath.Join(dir, "good.json"), filepath.Join(dir, "good.intoto.json"), filepath.Join(dir, "good.badge.json")
	r := runCLI(t, "run", "--config", cfg, "--json", rep, "--attest", att, "--badge", badge, "--seed", "3")
	level, blocker, why := runLevel(t, rep)
	switch {
	case level == "draft-07 core" || level == "draft-07 full":
		if r.code != exitOK || !strings.Contains(r.stdout, "conformance: "+level) {
			t.Errorf("the correct reference: exit %d, the console names no level:\n%s%s", r.code, r.stdout, r.stderr)
		}
		if level == "draft-07 core" && blocker == "" {
			t.Error("core, not full: the report names what blocks full")
		}
	case level == "no level" && strings.Contains(why, "without evidence"):
		t.Logf("a stall left a MUST without evidence (%s): no level, which is not a wrong one", why)
	default:
		t.Fatalf("the correct reference reached %q (%s %s), exit %d:\n%s%s", level, blocker, why, r.code, r.stdout, r.stderr)
	}
	if doc := readJSON(t, badge); doc["schemaVersion"] != 1.0 || doc["label"] != "Idempotency-Key" || !strings.HasPrefix(doc["message"].(string), level+" · ") {
		t.Errorf("badge: %v", doc)
	}
	if cmd, _ := readJSON(t, rep)["command"].(string); !strings.HasPrefix(cmd, "idemcheck run --config ") || !strings.Contains(cmd, "--seed 3") {
		t.Errorf("the report records the command line: %q", cmd)
	}

	if v := runCLI(t, "verify", att, "--report", rep, "--config", cfg); v.code != exitOK || !strings.Contains(v.stdout, "consistent") {
		t.Fatalf("verify of an untouched run: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	raw, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(dir, "tampered.json")
	changed := strings.Replace(strings.Replace(string(raw), `"status": "pass"`, `"status": "fail"`, 1), `"verdict": "pass"`, `"verdict": "fail"`, 1)
	if err := os.WriteFile(tampered, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := runCLI(t, "verify", att, "--report", tampered); v.code != exitFail || !strings.Contains(v.stdout, "mismatch: report digest") {
		t.Errorf("one verdict changed: want exit 1 naming the digest, got %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	cfgRaw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	otherCfg := writeTemp(t, "changed.yaml", strings.Replace(string(cfgRaw), "amount: 1000", "amount: 1009", 1))
	if v := runCLI(t, "verify", att, "--config", otherCfg); v.code != exitFail || !strings.Contains(v.stdout, "mismatch: config digest") {
		t.Errorf("one config byte changed: want exit 1 naming the config, got %d\n%s%s", v.code, v.stdout, v.stderr)
	}

	bad := demotest.Serve(t, demo.Options{TTL: certifyTTL, Defects: []string{"no-inflight-lock"}})
	badRep, badAtt, badBadge := filepath.Join(dir, "bad.json"), filepath.Join(dir, "bad.intoto.json"), filepath.Join(dir, "bad.badge.json")
	r = runCLI(t, "run", "--config", certifyConfig(t, bad), "--json", badRep, "--attest", badAtt, "--badge", badBadge)
	level, blocker, why = runLevel(t, badRep)
	if level != "not conformant" || !strings.Contains(blocker, "(MUST) violated") || r.code != exitFail {
		t.Fatalf("no-inflight-lock: want not conformant naming a MUST, exit 1; got %q %q %q, exit %d", level, blocker, why, r.code)
	}
	if !strings.Contains(r.stdout, "conformance: not conformant: "+blocker) {
		t.Errorf("the console names the blocking requirement:\n%s", r.stdout)
	}
	if a, _ := os.ReadFile(badAtt); !strings.Contains(string(a), `"result": "FAILED"`) {
		t.Errorf("the defect's attestation is not FAILED:\n%s", a)
	}
	if doc := readJSON(t, badBadge); doc["color"] != "red" {
		t.Errorf("the defect's badge is not red: %v", doc)
	}
	if v := runCLI(t, "verify", badAtt, "--report", badRep); v.code != exitOK {
		t.Errorf("a failing run's attestation is consistent with its report: exit %d\n%s", v.code, v.stdout)
	}
}

// TestCertifySelection: globs that leave out a MUST claim no level and,
// under --require-must, exit 5 listing them; a MUST the config cannot
// test (one principal) is listed with the config line that would test it;
// --replay-of repeats the selection and seed and refuses another config;
// --expect fails only on a verdict worse than the expected report's.
func TestCertifySelection(t *testing.T) {
	dir := t.TempDir()
	good := demotest.Serve(t, demo.Options{TTL: certifyTTL})
	cfg := certifyConfig(t, good)

	small := filepath.Join(dir, "small.json")
	r := runCLI(t, "run", "--config", cfg, "--run", "replay/**", "--run", "concurrent/same-key-burst", "--skip", "concurrent/**", "--seed", "9", "--json", small)
	level, _, why := runLevel(t, small)
	if level != "no level" || !strings.Contains(why, "--run/--skip left out") || !strings.Contains(r.stdout, "left out by --run/--skip") {
		t.Errorf("globs leaving out MUSTs: want no level saying why, got %q %q\n%s", level, why, r.stdout)
	}
	r = runCLI(t, "run", "--config", cfg, "--run", "replay/single-execution", "--require-must")
	if r.code != exitIncomplete || !strings.Contains(r.stderr, "--require-must:") || !strings.Contains(r.stderr, "concurrent/same-key-burst@charges: left out by --run/--skip") {
		t.Errorf("--require-must with MUSTs left out: want exit 5 listing them, got %d\n%s", r.code, r.stderr)
	}

	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	onePrincipal := writeTemp(t, "one.yaml", strings.Replace(string(raw), "  - name: bob\n    headers: {Authorization: Bearer bob}\n", "", 1))
	r = runCLI(t, "run", "--config", onePrincipal, "--run", "scope/other-user-isolated", "--require-must")
	if r.code != exitIncomplete || !strings.Contains(r.stdout, "IK-SCOPE-1 scope/other-user-isolated@charges: needs second-principal; add principals:") {
		t.Errorf("one principal under --require-must: want exit 5 and the line that would test IK-SCOPE-1, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	replay := filepath.Join(dir, "replay.json")
	if r = runCLI(t, "run", "--replay-of", small, "--json", replay); r.code != exitOK {
		t.Fatalf("--replay-of: exit %d\n%s", r.code, r.stderr)
	}
	a, b := readJSON(t, small), readJSON(t, replay)
	if cmd, _ := b["command"].(string); a["seed"] != b["seed"] || len(a["results"].([]any)) != len(b["results"].([]any)) ||
		!strings.Contains(cmd, "--run 'replay/**' --run concurrent/same-key-burst --seed 9 --skip 'concurrent/**'") || strings.Contains(cmd, "--json") {
		t.Errorf("--replay-of runs the same selection and seed, with its own outputs: %v %v / %v %v", a["seed"], a["command"], b["seed"], b["command"])
	}
	changed := writeTemp(t, "changed.yaml", strings.Replace(string(raw), "amount: 1000", "amount: 1009", 1))
	if r = runCLI(t, "run", "--replay-of", small, "--config", changed); r.code != exitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 ||
		!strings.Contains(r.stderr, "has digest sha256:") {
		t.Errorf("--replay-of with another config: want one line, exit 2; got %d\n%s", r.code, r.stderr)
	}

	burst := filepath.Join(dir, "burst.json")
	runCLI(t, "run", "--config", cfg, "--run", "concurrent/same-key-burst", "--json", burst)
	// A stall on a loaded machine may make the burst inconclusive: worse
	// than its pass, so exit 1 naming it; never a failure on this server.
	r = runCLI(t, "run", "--config", cfg, "--run", "concurrent/same-key-burst", "--expect", burst)
	if (r.code != exitOK && !strings.Contains(r.stderr, "got inconclusive")) || strings.Contains(r.stderr, "got fail") {
		t.Errorf("--expect against the same server: exit %d\n%s", r.code, r.stderr)
	}
	bad := demotest.Serve(t, demo.Options{TTL: certifyTTL, Defects: []string{"no-inflight-lock"}})
	md := filepath.Join(dir, "summary.md")
	r = runCLI(t, "run", "--config", cfg, "--base-url", bad, "--run", "concurrent/same-key-burst", "--expect", burst, "--markdown", md)
	if r.code != exitFail || !strings.Contains(r.stderr, "worse than") || !strings.Contains(r.stderr, "expected pass, got ") {
		t.Errorf("--expect against the defect: want exit 1 listing the worse verdict, got %d\n%s", r.code, r.stderr)
	}
	// The summary's heading follows the exit code: the comparison's.
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "verdicts worse than expected") {
		t.Errorf("--expect --markdown: want a heading counting the worse verdicts (%v)\n%s", err, b)
	}
}

// TestReplicasNotTested: a case that needs replicas, on a config with
// neither replicas nor a way to count executions, is not tested ("needs
// replicas"), never "unverifiable: needs effects": it holds nothing back
// as missing evidence and is listed among the MUSTs not tested.
func TestReplicasNotTested(t *testing.T) {
	cfg := writeTemp(t, "bare.yaml", "base_url: "+serveNull(t)+"\nprincipals: [{name: a, headers: {X-Api-Key: k}}]\n"+
		"operations: [{name: things, method: POST, path: /things, body: {a: 1}}]\n")
	out := filepath.Join(t.TempDir(), "r.json")
	r := runCLI(t, "run", "--config", cfg, "--run", "replicas/burst-across", "--json", out)
	res := readJSON(t, out)["results"].([]any)[0].(map[string]any)
	if res["status"] != "skip" || !strings.Contains(res["reason"].(string), "replicas") || r.code != exitOK ||
		!strings.Contains(r.stdout, "IK-CONCURRENT-2 replicas/burst-across@things: needs replicas, effects; add replicas:") {
		t.Errorf("want a skip naming replicas and the line that supplies them, exit 0; got %v %v, exit %d\n%s", res["status"], res["reason"], r.code, r.stdout)
	}
}

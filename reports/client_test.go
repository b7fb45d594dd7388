package reports_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/reports"
	"github.com/idemcheck/idemcheck/scenarios"
)

// clientReport is a client run of two MUST cases: both pass, or the
// retry case fails (IK-CLIENT-5).
func clientReport(fail bool) *scenarios.Report {
	res := func(id, req string, st scenarios.Status) scenarios.Result {
		return scenarios.Result{Meta: scenarios.Meta{ID: id, Family: strings.Split(id, "/")[0], Level: scenarios.Must, Requirements: []string{req}},
			Status: st, Observed: "observed", Reason: "reason"}
	}
	retry := scenarios.Pass
	if fail {
		retry = scenarios.Fail
	}
	return &scenarios.Report{Client: true, Target: "client: node harness.mjs", Profile: "ietf", Protocol: "HTTP/1.1", Strict: true, Seed: 42,
		Results: []scenarios.Result{res("key/present", "IK-CLIENT-1", scenarios.Pass), res("retry/lost-answer", "IK-CLIENT-5", retry)}}
}

// Every writer heads a client run as a client certification, names the
// client and says its level, draft-07 client or not conformant naming
// the IK-CLIENT requirement; none calls it a conformance run or gives it
// a seed.
func TestClientReportsSayCertification(t *testing.T) {
	console := func(w io.Writer, rep *scenarios.Report) error {
		return reports.Console(w, rep, reports.ConsoleOptions{})
	}
	for _, fail := range []bool{false, true} {
		level := "draft-07 client"
		if fail {
			level = "not conformant: IK-CLIENT-5"
		}
		for _, tc := range []struct {
			name  string
			write func(io.Writer, *scenarios.Report) error
			says  []string
		}{
			{"console", console, []string{"idemcheck client certification: node harness.mjs against the stand-in over HTTP/1.1, profile ietf, strict true\n", "conformance: " + level}},
			{"markdown", reports.Markdown, []string{"## idemcheck client certification: ", "Client `node harness.mjs` against the stand-in over HTTP/1.1 · profile `ietf`", "**Conformance: " + level}},
			{"html", reports.HTML, []string{"<title>idemcheck client certification: ", " — node harness.mjs</title>", "<h1>idemcheck client certification <span",
				"client <code>node harness.mjs</code> against the stand-in over HTTP/1.1", "Conformance: <b>" + level}},
			{"junit", reports.JUnit, []string{`<testsuites name="idemcheck client certification"`, `<property name="client" value="node harness.mjs">`,
				`<property name="conformance_detail" value="` + level}},
			{"json", reports.JSON, []string{`"client": true`, `"level": "` + strings.Split(level, ":")[0] + `"`}},
			{"badge", reports.WriteBadge, []string{`"label":"Idempotency-Key client"`, `"message":"` + strings.ReplaceAll(level, ": ", " · ")}},
		} {
			var b bytes.Buffer
			if err := tc.write(&b, clientReport(fail)); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, s := range tc.says {
				if !strings.Contains(out, s) {
					t.Errorf("fail %v: %s does not say %q:\n%s", fail, tc.name, s, out)
				}
			}
			if strings.Contains(out, "idemcheck conformance") || strings.Contains(out, "seed 42") || strings.Contains(out, "seed `42`") {
				t.Errorf("fail %v: %s calls a client run a conformance run or gives it a seed:\n%s", fail, tc.name, out)
			}
		}
	}
}

// A client run's attestation names itself a client certification with
// its level, and verifies against the client catalog as one.
func TestClientAttestation(t *testing.T) {
	for _, fail := range []bool{false, true} {
		rep := clientReport(fail)
		var catalog []scenarios.Meta
		for _, r := range rep.Results {
			catalog = append(catalog, r.Meta)
		}
		var b bytes.Buffer
		o := reports.AttestOptions{Tool: reports.Tool{Version: "dev"}, ClientCatalog: catalog,
			Subjects: []reports.Subject{{Name: "sdk", SHA256: strings.Repeat("ab", 32)}}}
		if err := reports.Attest(&b, rep, o); err != nil {
			t.Fatal(err)
		}
		level, claim := "draft-07 client", "a client certification, level draft-07 client"
		if fail {
			level, claim = "not conformant", "a client certification, level not conformant"
		}
		if !strings.Contains(b.String(), `"name": "idemcheck client certification"`) || !strings.Contains(b.String(), `"level": "`+level+`"`) {
			t.Errorf("fail %v: the attestation does not name a client certification at %s:\n%s", fail, level, b.String())
		}
		bad, err := reports.Verify(reports.VerifyInput{Attestation: b.Bytes(), Tool: o.Tool, ClientCatalog: catalog})
		if err != nil || len(bad) > 0 {
			t.Errorf("fail %v: verify: %v %v", fail, err, bad)
		}
		a, err := reports.ReadAttestation(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if a.Claim() != claim {
			t.Errorf("fail %v: claim %q, want %q", fail, a.Claim(), claim)
		}
	}
}

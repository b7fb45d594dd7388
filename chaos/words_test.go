package chaos_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/chaos"
)

// TestCheckerWords: the checker's lines name answers as the target's
// protocol does. The same history, once as HTTP answers and once as gRPC
// calls (the code beside the status it maps to), breaks the same rule;
// the gRPC line names the codes ("ABORTED (409)", "OK"), the HTTP line
// keeps the statuses, and the violation carries upstream_codes over gRPC
// only.
func TestCheckerWords(t *testing.T) {
	up := func(grpc bool, status int, code, id, sha string) chaos.Upstream {
		u := chaos.Upstream{Status: status, ID: id, SHA256: sha}
		if grpc {
			u.GRPCCode = code
		}
		return u
	}
	att := func(grpc bool, n int, body string, u chaos.Upstream) chaos.Event {
		ev := chaos.Event{Type: "attempt", Key: "k", Attempt: n, RequestSHA256: body, Client: chaos.ClientOK, Status: u.Status, Upstream: []chaos.Upstream{u}}
		if grpc {
			ev.GRPCCode = u.GRPCCode
		}
		return ev
	}
	cases := []struct {
		name       string
		history    func(grpc bool) ([]chaos.Event, chaos.Op)
		http, grpc string
		codes      []string
	}{
		{"wrong answer",
			func(g bool) ([]chaos.Event, chaos.Op) {
				return []chaos.Event{att(g, 1, "a", up(g, 400, "FAILED_PRECONDITION", "", "e")), att(g, 2, "a", up(g, 409, "ABORTED", "", "c"))},
					chaos.Op{Key: "k", Kind: chaos.KindBusiness, Outcome: chaos.ClientFail, Status: 409, Oracle: intp(1)}
			},
			"client got status 409, the committed answer was 400", "client got ABORTED (409), the committed answer was FAILED_PRECONDITION (400)",
			[]string{"FAILED_PRECONDITION", "ABORTED"}},
		{"changed body executed",
			func(g bool) ([]chaos.Event, chaos.Op) {
				return []chaos.Event{att(g, 1, "a", up(g, 200, "OK", "x", "o")), att(g, 2, "b", up(g, 200, "OK", "x", "o"))},
					chaos.Op{Key: "k", Kind: chaos.KindMutated, Outcome: chaos.ClientOK, Status: 200, ID: "x", Oracle: intp(1)}
			},
			"2 different request bodies under one key all got 2xx (a changed body must be rejected, e.g. 422)",
			"2 different request messages under one key all got OK (a changed message must be rejected, e.g. INVALID_ARGUMENT)",
			[]string{"OK", "OK"}},
		{"error replayed",
			func(g bool) ([]chaos.Event, chaos.Op) {
				return []chaos.Event{att(g, 1, "a", up(g, 503, "UNAVAILABLE", "", "e")), att(g, 2, "a", up(g, 503, "UNAVAILABLE", "", "e"))},
					chaos.Op{Key: "k", Kind: chaos.KindTransient, Outcome: chaos.ClientFail, Status: 503, Oracle: intp(1)}
			},
			"2 upstream 5xx answers, all with the same body, but only 1 executions: a 5xx was replayed instead of re-executed",
			"2 upstream UNAVAILABLE answers, all with the same status (code, message, details), but only 1 executions: the error was replayed instead of re-executed",
			[]string{"UNAVAILABLE", "UNAVAILABLE"}},
		{"lost, the client's answer made up",
			// The retry after the commit is answered 409 by the server; the
			// client's last attempt was dropped (UNAVAILABLE, not recorded
			// as a code): its 503 stands for the code that maps to it.
			func(g bool) ([]chaos.Event, chaos.Op) {
				drop := att(g, 1, "a", up(g, 200, "OK", "x", "o"))
				drop.Fault, drop.Client, drop.Status, drop.GRPCCode = "drop-response", chaos.ClientUnknown, 0, ""
				return []chaos.Event{drop, att(g, 2, "a", up(g, 409, "ABORTED", "", "c"))},
					chaos.Op{Key: "k", Kind: chaos.KindNormal, Outcome: chaos.ClientUnknown, Status: 503, Oracle: intp(1)}
			},
			"answered a retry sent after the commit with status 409; the client ended unknown (status 503, )",
			"answered a retry sent after the commit with ABORTED (409); the client ended unknown (UNAVAILABLE (503), )",
			[]string{"OK", "ABORTED"}},
	}
	for _, tc := range cases {
		for _, grpc := range []bool{false, true} {
			c := chaos.NewChecker()
			evs, op := tc.history(grpc)
			for _, ev := range evs {
				c.Attempt(ev)
			}
			c.Op(op)
			rep := c.Report()
			if len(rep.Violations) != 1 {
				t.Errorf("%s (gRPC %v): violations %+v, want one", tc.name, grpc, rep.Violations)
				continue
			}
			v := rep.Violations[0]
			want, other, codes := tc.http, tc.grpc, []string(nil)
			if grpc {
				want, other, codes = tc.grpc, tc.http, tc.codes
			}
			if !strings.Contains(v.Detail, want) || strings.Contains(v.Detail, other) {
				t.Errorf("%s (gRPC %v): %q, want %q", tc.name, grpc, v.Detail, want)
			}
			if strings.Join(v.Codes, ",") != strings.Join(codes, ",") {
				t.Errorf("%s (gRPC %v): upstream codes %v, want %v", tc.name, grpc, v.Codes, codes)
			}
		}
	}
}

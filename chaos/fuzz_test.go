package chaos

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseRule: an accepted fault spec re-parses from its own Spec to the
// same kind and selection, its probability is in 0..1; errors are one line.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"drop-response:0.3", "drop-response", "drop-response:p=0.3,mode=rst", "drop-response:attempt=1",
		"status:p=0.1,code=503,path=/v1/charges,method=post,header=x-foo:bar", "delay:p=1,before=200ms",
		"duplicate:p=0.1,mode=concurrent", "reset-midbody:0.5", "truncate-request:p=0.2", "drop-request:1",
		"explode:0.1", "drop-response:1.5", "drop-response:NaN", "drop-response:p=NaN", "drop-response:mode=rst,mode=fin",
		"drop-response:p", "delay:before=soon", "status:code=200", "drop-response:path=/v1/*", " delay:before=1h ",
		"drop-response:a\n=1,a\n=2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		r, err := ParseRule(spec)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error is not one line: %q", msg)
			}
			return
		}
		if !(r.Select.P >= 0 && r.Select.P <= 1) {
			t.Fatalf("%q: probability %v accepted", spec, r.Select.P)
		}
		again, err := ParseRule(r.Spec)
		if err != nil {
			t.Fatalf("%q accepted, its spec %q is not: %v", spec, r.Spec, err)
		}
		if again.Kind != r.Kind || again.Select != r.Select {
			t.Fatalf("%q re-parses differently: %+v vs %+v", spec, r, again)
		}
	})
}

// FuzzReadHistory feeds arbitrary JSONL to the history reader and the
// checker behind it (analyze reads files from other machines and older
// versions). Properties: no panic; an error names the line; the report
// counts what was fed.
func FuzzReadHistory(f *testing.F) {
	for _, s := range []string{
		`{"type":"attempt","key":"k","attempt":1,"method":"POST","path":"/v1/charges","client":"ok","status":201,"upstream":[{"status":201,"id":"ch_1"}]}` + "\n" +
			`{"type":"op","key":"k","operation":"charges","kind":"normal","attempts":1,"outcome":"ok","status":201,"id":"ch_1","oracle":1}` + "\n",
		`{"type":"attempt","key":"k","attempt":2,"client":"unknown","fault":"drop-response"}` + "\n" + `{"type":"op","key":"k","kind":"storm","outcome":"unknown"}`,
		`{"type":"op","key":"k","kind":"transient","outcome":"ok","status":503,"oracle":-1}`,
		`{"type":"op","key":"","kind":"mutated","outcome":"fail"}`, `{"type":"weird"}`, `not json`, "\n\n", `{"type":"attempt","attempt":-5}`,
		`{"type":"op","key":"k","kind":"business","outcome":"ok","status":402,"attempts":3}` + "\n" + `{"type":"op","key":"k","kind":"normal","outcome":"ok"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewChecker()
		_, err := ReadHistory(bytes.NewReader(data), c, false)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "history line ") && !strings.HasPrefix(msg, "empty history") && !strings.Contains(msg, "token too long") {
				t.Fatalf("error does not name its line in one line: %q", msg)
			}
		}
		rep := c.Report()
		if rep.Ops > rep.Keys || rep.Unresolved > rep.Ops {
			t.Fatalf("inconsistent report: %+v", rep)
		}
	})
}

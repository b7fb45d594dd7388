package chaos_test

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/chaos"
)

func TestParseRule(t *testing.T) {
	cases := []struct {
		spec, explanation string
		want              chaos.Select // for valid specs
		errHas            string       // non-empty: must fail naming this
	}{
		{"drop-response:0.3", "shorthand probability", chaos.Select{P: 0.3}, ""},
		{"drop-response", "no selector: every attempt", chaos.Select{P: 1}, ""},
		{"drop-response:p=0.3,mode=rst", "probability and a fault parameter", chaos.Select{P: 0.3}, ""},
		{"drop-response:attempt=1", "Nth attempt of a key, probability 1", chaos.Select{P: 1, Attempt: 1}, ""},
		{"status:p=0.1,code=503,path=/v1/charges,method=post,header=x-foo:bar", "all match keys",
			chaos.Select{P: 0.1, Method: "POST", Path: "/v1/charges", Header: "X-Foo", Value: "bar"}, ""},
		{"delay:p=1,before=200ms", "a duration", chaos.Select{P: 1}, ""},
		{"duplicate:p=0.1,mode=concurrent", "duplicate mode", chaos.Select{P: 0.1}, ""},
		{"explode:0.1", "unknown kind", chaos.Select{}, `"explode": unknown kind`},
		{"drop-response:1.5", "probability out of range", chaos.Select{}, "want 0..1"},
		{"drop-response:p=abc", "probability not a number", chaos.Select{}, `"p=abc"`},
		{"drop-response:mode=rst,mode=fin", "a key given twice", chaos.Select{}, `"mode" given twice`},
		{"drop-response:mode=slam", "bad mode value", chaos.Select{}, "mode=slam"},
		{"drop-response:colour=red", "unknown parameter", chaos.Select{}, `"colour"`},
		{"drop-response:p", "token without a value", chaos.Select{}, `token "p"`},
		{"delay:p=1", "delay without a duration", chaos.Select{}, "before=D"},
		{"delay:before=soon", "bad duration", chaos.Select{}, `"before=soon"`},
		{"status:code=200", "status must be an error", chaos.Select{}, "code=200"},
		{"drop-response:attempt=0", "attempts count from 1", chaos.Select{}, "attempt=0"},
		{"drop-response:path=v1", "relative path", chaos.Select{}, "path=v1"},
		{"drop-response:header=X-Foo", "header without value", chaos.Select{}, "header=X-Foo"},
	}
	for _, tc := range cases {
		r, err := chaos.ParseRule(tc.spec)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s: ParseRule(%q) error %v, want one naming %s", tc.explanation, tc.spec, err, tc.errHas)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: ParseRule(%q): %v", tc.explanation, tc.spec, err)
			continue
		}
		if r.Select != tc.want {
			t.Errorf("%s: ParseRule(%q).Select = %+v, want %+v", tc.explanation, tc.spec, r.Select, tc.want)
		}
	}
}

package reference

import (
	"net/http"
	"testing"
)

func TestAcceptsGzip(t *testing.T) {
	cases := []struct {
		lines []string // nil: no Accept-Encoding field
		want  bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"br, gzip;q=0.5"}, true},
		{[]string{"br", "gzip"}, true}, // two field lines
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false}, // gzip refused by name
		{[]string{"gzip;q=nonsense"}, false},
	}
	for _, c := range cases {
		r := &http.Request{Header: http.Header{}}
		if c.lines != nil {
			r.Header["Accept-Encoding"] = c.lines
		}
		if got := acceptsGzip(r); got != c.want {
			t.Errorf("Accept-Encoding %q: accepts gzip %v, want %v", c.lines, got, c.want)
		}
	}
}

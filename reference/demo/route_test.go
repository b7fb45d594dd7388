package demo

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCreatesFirst: the create endpoints' exact paths skip the mux, and
// every other path (a subtree, an escaped spelling, a longer name) still
// goes through it.
func TestCreatesFirst(t *testing.T) {
	var got string
	mark := func(name string) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got = name })
	}
	h := createsFirst(mark("protected"), mark("mux"))
	for _, c := range []struct{ target, want string }{
		{"/v1/charges", "protected"},
		{"/v1/refunds", "protected"},
		{"/v1/charges?x=1", "protected"},
		{"/v1/charges/", "mux"},
		{"/v1/charges/ch_1/cancel", "mux"},
		{"/v1/%63harges", "mux"}, // escaped: the mux decides as before
		{"/v1/chargesx", "mux"},
		{"/v1/effects", "mux"},
		{"/healthz", "mux"},
	} {
		got = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, c.target, nil))
		if got != c.want {
			t.Errorf("%s went to %q, want %q", c.target, got, c.want)
		}
	}
}

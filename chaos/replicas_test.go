package chaos_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemcheck/idemcheck/chaos"
)

// TestProxyReplicas: with Replicas the proxy sends attempts to its
// upstreams in turn, over its own per-host connection pools.
func TestProxyReplicas(t *testing.T) {
	var hits [3]int
	var srvs []*httptest.Server
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i]++ // the proxy forwards one attempt at a time here
			w.WriteHeader(http.StatusCreated)
		}))
		defer srv.Close()
		srvs = append(srvs, srv)
	}
	p, err := chaos.New(srvs[0].URL, chaos.WithReplicas(srvs[1].URL, srvs[2].URL))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	front, err := chaos.Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer front.Close()
	client := &http.Client{}
	defer client.CloseIdleConnections()
	for range 6 {
		resp, err := client.Post(front.URL+"/v1/charges", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if hits != [3]int{2, 2, 2} {
		t.Errorf("attempts per upstream %v, want 2 each", hits)
	}
	if _, err := chaos.New(srvs[0].URL, chaos.WithReplicas("/x")); err == nil {
		t.Error("a relative replica URL was accepted")
	}
}

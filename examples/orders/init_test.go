package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/initconfig"
)

// TestInitProbe: `idemcheck init --probe` on this API, which it was not
// written for, learns what examples/orders.yaml says by hand: the bare key
// in X-Idempotency-Key, the created id at /order/uuid, no replay marker,
// 422 for a changed body once the first request completed.
func TestInitProbe(t *testing.T) {
	srv := httptest.NewServer(newShop(time.Hour))
	defer srv.Close()
	out, err := initconfig.Probe(context.Background(), initconfig.ProbeOptions{
		URL: srv.URL + "/api/v2/orders", Body: `{"sku":"SKU-42","quantity":2}`,
		Headers: []string{"X-Api-Key: key_alice"}, KeyHeader: "X-Idempotency-Key", Command: "idemcheck init --probe"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMCHECK_TOKEN_1", "key_alice")
	t.Setenv("IDEMCHECK_TOKEN_2", "key_bob")
	tg, profile, err := apispec.ParseConfig(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if tg.KeySyntax != apispec.Raw || tg.Operations[0].IDPointer != "/order/uuid" ||
		profile.ReplayHeader != "" || len(profile.MismatchStatus) != 1 || profile.MismatchStatus[0] != 422 {
		t.Errorf("learnt %s, %q, replay header %q, mismatch %v; want raw, /order/uuid, none, [422]\n%s",
			tg.KeySyntax, tg.Operations[0].IDPointer, profile.ReplayHeader, profile.MismatchStatus, out)
	}
}

package scenarios

import (
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestSupplies: a full config supplies every need of one operation, not a
// second operation; "ttl: never" supplies the ttl need (the expiry cases
// run to record that keys never expire).
func TestSupplies(t *testing.T) {
	tg, _, err := apispec.LoadConfig("../apispec/testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []Need{NeedOracle, NeedEffects, NeedIDPointer, NeedSecondPrincipal, NeedSlow, NeedBusinessError, NeedTransientError, NeedInvalid, NeedTTL, NeedLease, NeedLarge, NeedBinary, NeedCrash, NeedTimeout} {
		if !Supplies(tg, n) {
			t.Errorf("Supplies(%s) = false", n)
		}
	}
	if Supplies(tg, NeedSecondOperation) {
		t.Error("Supplies(second-operation) with one operation")
	}
	never, _, err := apispec.ParseConfig([]byte("base_url: http://127.0.0.1:1\nprincipals: [{name: a}]\noperations: [{name: c, method: POST, path: /c, body: {a: 1}}]\nttl: never\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !Supplies(never, NeedTTL) {
		t.Error("ttl: never does not supply the ttl need")
	}
}

package drive

import (
	"strings"
	"testing"

	"github.com/idemcheck/idemcheck/apispec"
)

// TestOperationsOwnMarks: each key's answers are read at its own
// operation's pointer; an operation without one gives no id (never the
// whole body), an update none but its version, and --operation selects.
func TestOperationsOwnMarks(t *testing.T) {
	tg := &apispec.Target{Operations: []apispec.Operation{
		{Name: "charges", IDPointer: "/id"},
		{Name: "notes"},
		{Name: "accounts", IDPointer: "/id", Kind: apispec.KindUpdate},
		{Name: "ledger", IDPointer: "/id", Kind: apispec.KindUpdate, VersionPointer: "/version"},
	}}
	ko := &keyOps{}
	for i := range tg.Operations {
		ko.set(tg.Operations[i].Name, &tg.Operations[i])
	}
	body := []byte(`{"id":"acc_5","version":3,"note":"x"}`)
	for key, want := range map[string]string{"charges": "acc_5", "notes": "", "accounts": "", "ledger": "acc_5@3", "unknown": ""} {
		if got := ko.mark(key, body); got != want {
			t.Errorf("%s: mark %q, want %q", key, got, want)
		}
	}
	c := config{target: tg, operations: []string{"notes"}}
	if err := c.selectOperations(); err != nil || len(c.target.Operations) != 1 || c.target.Operations[0].Name != "notes" {
		t.Errorf("--operation notes: %v, %v", err, c.target.Operations)
	}
	c = config{target: tg, operations: []string{"nope"}}
	if err := c.selectOperations(); err == nil || !strings.Contains(err.Error(), `--operation "nope": no such operation`) {
		t.Errorf("--operation nope: %v", err)
	}
}

package demo

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
)

// patch sends PATCH path as alice under key (quoted here).
func (h *harness) patch(path, key, body string) reply {
	h.t.Helper()
	return h.do("PATCH", path, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer alice"},
		"Idempotency-Key": {`"` + key + `"`}}, body)
}

// newCharge creates one of alice's charges and returns its id.
func newCharge(t *testing.T, h *harness) string {
	t.Helper()
	r := h.post("/v1/charges", "alice", `"`+newKey()+`"`, chargeBody)
	id, _ := r.json(t)["id"].(string)
	if r.status != http.StatusCreated || id == "" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	return id
}

// TestUpdateDefects: each defect of the operations on an existing charge
// changes exactly what it names: the probe passes on the correct build
// and fails with the defect on.
func TestUpdateDefects(t *testing.T) {
	probes := map[reference.Defect]defectProbe{
		reference.UpdateReplaysCurrentState: func(t *testing.T, h *harness) (bool, string) {
			id := newCharge(t, h)
			a, b := newKey(), newKey()
			first := h.patch("/v1/charges/"+id, a, `{"description":"a"}`)
			h.patch("/v1/charges/"+id, b, `{"description":"b"}`)
			retry := h.patch("/v1/charges/"+id, a, `{"description":"a"}`)
			return retry.body == first.body, "first " + first.body + ", retry after another key " + retry.body
		},
		reference.UpdateIgnoresFingerprint: func(t *testing.T, h *harness) (bool, string) {
			id := newCharge(t, h)
			k := newKey()
			h.patch("/v1/charges/"+id, k, `{"description":"a"}`)
			changed := h.patch("/v1/charges/"+id, k, `{"description":"changed"}`)
			return changed.status == http.StatusUnprocessableEntity, "changed body under the same key: " + changed.body
		},
		reference.ActionReexecutes: func(t *testing.T, h *harness) (bool, string) {
			id := newCharge(t, h)
			k := `"` + newKey() + `"`
			first := h.post("/v1/charges/"+id+"/cancel", "alice", k, `{}`)
			retry := h.post("/v1/charges/"+id+"/cancel", "alice", k, `{}`)
			return first.status == http.StatusOK && retry.body == first.body, "cancel " + first.body + ", retry " + retry.body
		},
	}
	for _, d := range reference.Defects() {
		if d.Defect.UpdateOnly() && probes[d.Defect] == nil {
			t.Errorf("defect %s has no probe", d.Defect)
		}
	}
	for d, probe := range probes {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			for _, defects := range [][]string{nil, {string(d)}} {
				store := memstore.New(memstore.WithSweepInterval(50 * time.Millisecond))
				defer store.Close()
				ok, saw := probe(t, newHarness(t, Options{Store: store, Defects: defects}))
				switch {
				case defects == nil && !ok:
					t.Errorf("correct build failed the probe: %s", saw)
				case defects != nil && ok:
					t.Errorf("defect %s not observable: %s", d, saw)
				}
			}
		})
	}
}

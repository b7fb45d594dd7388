package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/wire"
)

// retryPastLease sends the slow variant under a fresh key k and, once the
// declared lease (plus leaseMargin) has run out while it is still in
// flight, a retry of it: a server whose lease lapses lets the retry take
// the key over. It returns when both have answered.
func (e *Env) retryPastLease(ctx context.Context) (k string, slow, retry wire.Resp) {
	body, v, _ := e.Variant(apispec.VariantSlow)
	lease := e.Target.Lease
	k = e.NewKey()
	done := make(chan struct{})
	go func() {
		defer close(done)
		slow = e.Send(ctx, Req{Label: fmt.Sprintf("slow original (%s, lease %s)", v.Duration, lease), Key: k, Body: body})
	}()
	select {
	case <-time.After(lease + leaseMargin):
	case <-done:
	case <-ctx.Done():
	}
	retry = e.Send(ctx, Req{Label: "retry after the lease ran out", Key: k, Body: body})
	<-done
	return k, slow, retry
}

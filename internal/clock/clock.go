package clock

import (
	"context"
	"time"
)

// Until sleeps until t or the context ends (then its error).
func Until(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

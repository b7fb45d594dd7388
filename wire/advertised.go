package wire

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/apispec"
)

// FetchTTL reads the keys' lifetime the target advertises (t.TTLFrom):
// the value at its pointer as an ISO 8601 duration (PT1H, P1D), a Go
// duration (24h) or a number of seconds. Errors wrap apispec.ErrTTLFrom and name
// the value.
func FetchTTL(ctx context.Context, t *apispec.Target, c *http.Client) (time.Duration, error) {
	v, err := fetchAt(ctx, t, c, t.TTLFrom, "ttl_from", apispec.ErrTTLFrom, nil)
	if err != nil {
		return 0, err
	}
	d, err := ParseLifetime(v)
	if err != nil {
		return 0, fmt.Errorf("%w %s %s: %v", apispec.ErrTTLFrom, t.TTLFrom.Method, t.TTLFrom.Path, err)
	}
	return d, nil
}

// isoDuration is an ISO 8601 duration of days and time (no years or
// months: their length is not fixed).
var isoDuration = regexp.MustCompile(`^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// ParseLifetime reads an advertised lifetime: an ISO 8601 duration (weeks,
// days, hours, minutes, seconds), a Go duration or a number of seconds.
// It must be positive.
func ParseLifetime(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if m := isoDuration.FindStringSubmatch(strings.ToUpper(v)); m != nil && v != "P" && !strings.HasSuffix(strings.ToUpper(v), "T") {
		units := []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, time.Hour, time.Minute, time.Second}
		for i, u := range units {
			if m[i+1] != "" {
				f, _ := strconv.ParseFloat(m[i+1], 64) // the pattern admits only numbers
				d += time.Duration(f * float64(u))
			}
		}
	} else if secs, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(secs * float64(time.Second))
	} else if gd, err := time.ParseDuration(v); err == nil {
		d = gd
	} else {
		return 0, fmt.Errorf("%q is not a lifetime (an ISO 8601 duration such as PT1H, a duration such as 24h, or seconds)", v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: the lifetime must be positive", v)
	}
	return d, nil
}

package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Phase is one stretch of a rate plan. Each phase runs on its own vegeta
// Attacker because an Attacker is single-use.
type Phase struct {
	Spec     string // the token it was parsed from, e.g. "1000@30s"
	Duration time.Duration
	Pacer    vegeta.Pacer
	// Max is true for "max@DUR": as fast as the bounded workers allow
	// (closed loop), the mode used to find the highest sustainable rate.
	Max bool
}

// Plan is a sequence of phases run back to back.
type Plan []Phase

// String is the plan in the syntax ParsePlan reads.
func (p Plan) String() string {
	specs := make([]string, len(p))
	for i, ph := range p {
		specs[i] = ph.Spec
	}
	return strings.Join(specs, " ")
}

// Duration is the planned total.
func (p Plan) Duration() time.Duration {
	var d time.Duration
	for _, ph := range p {
		d += ph.Duration
	}
	return d
}

// Plan limits: every loop is bounded, and CI boxes have 2 cores.
const (
	maxPhaseRate     = 100_000
	maxPhaseDuration = time.Hour
	maxPhases        = 100
)

// Constant returns the one-phase plan RATE@DUR.
func Constant(rate int, d time.Duration) (Plan, error) {
	return ParsePlan(fmt.Sprintf("%d@%s", rate, d))
}

// ParsePlan reads a space-separated list of phases:
//
//	RATE@DUR               constant, e.g. 1000@30s
//	RATE->RATE@DUR         linear ramp, e.g. 100->2000@60s
//	sine(MEAN,AMP,PERIOD)@DUR  e.g. sine(1000,500,10s)@60s
//	max@DUR                as fast as the bounded workers allow
//
// Rates are requests per second.
func ParsePlan(s string) (Plan, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, fmt.Errorf("plan %q: empty; want phases like \"100@10s 1000@30s\"", s)
	}
	if len(fields) > maxPhases {
		return nil, fmt.Errorf("plan: %d phases, at most %d", len(fields), maxPhases)
	}
	plan := make(Plan, 0, len(fields))
	for _, tok := range fields {
		ph, err := parsePhase(tok)
		if err != nil {
			return nil, fmt.Errorf("plan token %q: %w", tok, err)
		}
		plan = append(plan, ph)
	}
	return plan, nil
}

func parsePhase(tok string) (Phase, error) {
	at := strings.LastIndexByte(tok, '@')
	if at < 0 {
		return Phase{}, fmt.Errorf("missing @DURATION (e.g. 100@10s)")
	}
	shape, durText := tok[:at], tok[at+1:]
	d, err := time.ParseDuration(durText)
	if err != nil || d <= 0 || d > maxPhaseDuration {
		return Phase{}, fmt.Errorf("duration %q: want a positive Go duration up to %s (e.g. 30s)", durText, maxPhaseDuration)
	}
	ph := Phase{Spec: tok, Duration: d}
	switch {
	case shape == "max":
		ph.Max = true
		ph.Pacer = vegeta.Rate{Freq: 0, Per: time.Second}
	case strings.HasPrefix(shape, "sine(") && strings.HasSuffix(shape, ")"):
		args := strings.Split(shape[len("sine("):len(shape)-1], ",")
		if len(args) != 3 {
			return Phase{}, fmt.Errorf("sine wants (MEAN,AMP,PERIOD), e.g. sine(1000,500,10s)")
		}
		mean, err := parseRate(args[0])
		if err != nil {
			return Phase{}, err
		}
		amp, err := parseRate(args[1])
		if err != nil {
			return Phase{}, err
		}
		period, err := time.ParseDuration(strings.TrimSpace(args[2]))
		if err != nil || period <= 0 {
			return Phase{}, fmt.Errorf("sine period %q: want a positive duration", args[2])
		}
		if amp >= mean {
			return Phase{}, fmt.Errorf("sine amplitude %d must be below the mean %d (the rate would reach zero)", amp, mean)
		}
		ph.Pacer = vegeta.SinePacer{
			Period:  period,
			Mean:    vegeta.Rate{Freq: mean, Per: time.Second},
			Amp:     vegeta.Rate{Freq: amp, Per: time.Second},
			StartAt: vegeta.MeanUp,
		}
	case strings.Contains(shape, "->"):
		from, to, _ := strings.Cut(shape, "->")
		r0, err := parseRate(from)
		if err != nil {
			return Phase{}, err
		}
		r1, err := parseRate(to)
		if err != nil {
			return Phase{}, err
		}
		ph.Pacer = vegeta.LinearPacer{
			StartAt: vegeta.Rate{Freq: r0, Per: time.Second},
			Slope:   float64(r1-r0) / d.Seconds(),
		}
	default:
		r, err := parseRate(shape)
		if err != nil {
			return Phase{}, err
		}
		ph.Pacer = vegeta.Rate{Freq: r, Per: time.Second}
	}
	return ph, nil
}

func parseRate(s string) (int, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "/s")
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > maxPhaseRate {
		return 0, fmt.Errorf("rate %q: want a whole number of requests per second in 1..%d", s, maxPhaseRate)
	}
	return n, nil
}

// expectedHits is how many requests the phase plans to send (0 for max),
// used only to size progress output.
func (ph Phase) expectedHits() uint64 {
	type hitter interface{ Rate(time.Duration) float64 }
	if ph.Max {
		return 0
	}
	h, ok := ph.Pacer.(hitter)
	if !ok {
		return 0
	}
	// Trapezoid over 100 slices is exact for constant and linear pacers and
	// close for sine.
	const slices = 100
	step := ph.Duration / slices
	var total float64
	for i := 0; i < slices; i++ {
		a, b := time.Duration(i)*step, time.Duration(i+1)*step
		total += (h.Rate(a) + h.Rate(b)) / 2 * step.Seconds()
	}
	return uint64(math.Round(total))
}

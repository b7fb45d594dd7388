package reports

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/reports/internal/words"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/wire"
)

// A client run's HTML report draws each case run's attempts on a
// timeline: one row per attempt, placed by its arrival and length on the
// run's own scale, so that waits (back-off, Retry-After) show as gaps.

type htmlTimeline struct {
	Name string // the run ("run lost-answer/5")
	Span string // its length
	Bars []htmlBar
}

type htmlBar struct {
	Label string
	Class string // c-pass (2xx), c-warn (an error answer), c-fail (no answer)
	Style template.CSS
	Title string
}

// timelines groups r's exchanges by the run their label names ("run NAME
// attempt N ...", clientcheck's labels), in order.
func timelines(r scenarios.Result) []htmlTimeline {
	var out []htmlTimeline
	groups := map[string][]wire.Exchange{}
	for _, ex := range r.Exchanges {
		run, _, ok := strings.Cut(strings.TrimPrefix(ex.Label, "run "), " attempt")
		if !ok || !strings.HasPrefix(ex.Label, "run ") || ex.Start.IsZero() {
			continue
		}
		if groups[run] == nil {
			out = append(out, htmlTimeline{Name: "run " + run})
		}
		groups[run] = append(groups[run], ex)
	}
	for i := range out {
		exs := groups[strings.TrimPrefix(out[i].Name, "run ")]
		t0, t1 := exs[0].Start, exs[0].Start.Add(exs[0].Duration)
		for _, ex := range exs {
			t0 = minTime(t0, ex.Start)
			t1 = maxTime(t1, ex.Start.Add(ex.Duration))
		}
		span := max(t1.Sub(t0), time.Millisecond)
		out[i].Span = words.Duration(span)
		for _, ex := range exs {
			left := float64(ex.Start.Sub(t0)) / float64(span) * 100
			width := max(float64(ex.Duration)/float64(span)*100, 0.6)
			b := htmlBar{Style: template.CSS(fmt.Sprintf("margin-left:%.2f%%;width:%.2f%%", min(left, 99.4), min(width, 100-min(left, 99.4))))}
			_, b.Label, _ = strings.Cut(ex.Label, " attempt ")
			b.Label = "attempt " + b.Label
			result := "no answer: " + ex.Error
			switch {
			case ex.Response != nil && ex.Response.Status < 300:
				b.Class, result = "c-pass", fmt.Sprint(ex.Response.Status)
			case ex.Response != nil:
				b.Class, result = "c-warn", fmt.Sprint(ex.Response.Status)
				if ra := ex.Response.Header.Get("Retry-After"); ra != "" {
					result += " Retry-After: " + ra
				}
			default:
				b.Class = "c-fail"
			}
			b.Title = fmt.Sprintf("+%s, %s: %s", ex.Start.Sub(t0).Round(100*time.Microsecond), ex.Duration.Round(100*time.Microsecond), result)
			out[i].Bars = append(out[i].Bars, b)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

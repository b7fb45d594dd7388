package initconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/idemcheck/idemcheck/apispec"
)

// ttl is the retention the document declares: x-idempotency-ttl on the
// key parameter, the operation or the document, else a duration in the
// key parameter's description.
func (a *analysis) ttl(ops []operation) (time.Duration, string) {
	for _, o := range ops {
		if o.keyParam != nil {
			if d, ok := durationExt(o.keyParam.Extensions); ok {
				return d, "from x-idempotency-ttl of the " + o.keyParam.Name + " parameter"
			}
		}
		if d, ok := durationExt(o.op.Extensions); ok {
			return d, "from x-idempotency-ttl of " + o.method + " " + o.path
		}
	}
	if d, ok := durationExt(a.doc.Extensions); ok {
		return d, "from the document's x-idempotency-ttl"
	}
	for _, o := range ops {
		if o.keyParam == nil {
			continue
		}
		if d, text, ok := durationIn(o.keyParam.Description); ok {
			return d, fmt.Sprintf("guessed: from the %s parameter's description (%q)", o.keyParam.Name, text)
		}
	}
	return 0, ""
}

func durationExt(ext map[string]any) (time.Duration, bool) {
	v, ok := ext["x-idempotency-ttl"]
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case float64:
		if x > 0 {
			return time.Duration(x * float64(time.Second)), true
		}
	case int:
		if x > 0 {
			return time.Duration(x) * time.Second, true
		}
	case string:
		if d, err := time.ParseDuration(x); err == nil && d > 0 {
			return d, true
		}
		if d, ok := isoDuration(x); ok {
			return d, true
		}
		if d, _, ok := durationIn(x); ok {
			return d, true
		}
	}
	return 0, false
}

// isoRE is an ISO 8601 duration of days and time (P1D, PT24H, PT90S).
var isoRE = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$`)

func isoDuration(s string) (time.Duration, bool) {
	m := isoRE.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil {
		return 0, false
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if n, err := strconv.Atoi(m[i+1]); err == nil {
			d += time.Duration(n) * unit
		}
	}
	return d, d > 0
}

// durationRE finds "24 hours", "30s", "7 days", "PT24H"-free prose.
var durationRE = regexp.MustCompile(`(?i)\b(\d+)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b`)

func durationIn(text string) (time.Duration, string, bool) {
	m := durationRE.FindStringSubmatch(text)
	if m == nil {
		return 0, "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n <= 0 {
		return 0, "", false
	}
	unit := strings.ToLower(m[2])
	var d time.Duration
	switch {
	case strings.HasPrefix(unit, "ms"), strings.HasPrefix(unit, "milli"):
		d = time.Millisecond
	case strings.HasPrefix(unit, "s"):
		d = time.Second
	case strings.HasPrefix(unit, "m"):
		d = time.Minute
	case strings.HasPrefix(unit, "h"):
		d = time.Hour
	default:
		d = 24 * time.Hour
	}
	return time.Duration(n) * d, m[0], true
}

// rawRE finds a description saying the key is sent without quotes.
var rawRE = regexp.MustCompile(`\b(sent as is|as-is|bare|unquoted|without quotes|raw)\b`)

// keySyntax reads the key's syntax from the key parameter: an example in
// double quotes, or a description naming a structured field, is an
// sf-string; an example without quotes, a pattern refusing quotes or a
// description saying the key goes bare is raw; else (a uuid format
// included) the draft's sf-string.
func keySyntax(p *openapi3.Parameter) (apispec.KeySyntax, string) {
	if p == nil {
		return apispec.SFString, "guessed: the draft's syntax (\"key\"); use raw if the API wants the bare key"
	}
	ex := p.Example
	if ex == nil {
		for _, name := range sortedKeys(p.Examples) {
			if e := p.Examples[name]; e != nil && e.Value != nil && e.Value.Value != nil {
				ex = e.Value.Value
				break
			}
		}
	}
	if ex == nil && p.Schema != nil && p.Schema.Value != nil {
		ex = p.Schema.Value.Example
	}
	if s, ok := ex.(string); ok && s != "" {
		if strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
			return apispec.SFString, fmt.Sprintf("from the %s example %s (quoted: an sf-string)", p.Name, s)
		}
		return apispec.Raw, fmt.Sprintf("guessed: from the %s example %s, shown bare (use sf-string if the API parses the draft's quotes)", p.Name, s)
	}
	if sc := p.Schema; sc != nil && sc.Value != nil {
		// A uuid format says what the key is, not how it is sent: the
		// draft's own example is a UUID in quotes.
		if sc.Value.Format == "uuid" {
			return apispec.SFString, fmt.Sprintf("guessed: the draft's syntax; the %s schema's uuid format is the key's, quoted as in the draft's example (use raw if the API wants it bare)", p.Name)
		}
		// A pattern that wants the quotes, or takes a bare key and
		// refuses it quoted.
		if re, err := regexp.Compile(sc.Value.Pattern); err == nil && sc.Value.Pattern != "" {
			switch k := sampleString(sc.Value); {
			case !re.MatchString(k):
			case strings.HasPrefix(k, `"`):
				return apispec.SFString, fmt.Sprintf("from the %s schema's pattern %s, which wants quotes", p.Name, sc.Value.Pattern)
			case !re.MatchString(`"` + k + `"`):
				return apispec.Raw, fmt.Sprintf("from the %s schema's pattern %s, which refuses quotes", p.Name, sc.Value.Pattern)
			}
		}
	}
	d := strings.ToLower(p.Description)
	if m := rawRE.FindString(d); m != "" {
		return apispec.Raw, fmt.Sprintf("from the %s parameter's description (%q)", p.Name, m)
	}
	if strings.Contains(d, "structured field") || strings.Contains(d, "sf-string") || strings.Contains(d, "rfc 8941") || strings.Contains(d, "rfc 9651") {
		return apispec.SFString, "from the " + p.Name + " parameter's description (a structured-field string)"
	}
	return apispec.SFString, "guessed: the draft's syntax (\"key\"); use raw if the API wants the bare key"
}

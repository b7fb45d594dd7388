package clientcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dunglas/httpsfv"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/scenarios"
)

// retryAfterSlack is how much earlier than its Retry-After a retry may
// come and still count as waiting: timers and clocks round.
const retryAfterSlack = 50 * time.Millisecond

// noBackoff is the least wait that counts as backing off.
const noBackoff = 10 * time.Millisecond

// constantBackoff: waits whose longest is within this percentage of the
// shortest, plus waitSlack, do not grow.
const constantBackoff = 120

// waitSlack is how much a measured wait may exceed the client's own: the
// round trip and the scheduler of a loaded machine (a constant 50ms
// back-off measured 54ms, 60ms, 65ms on 2 busy cores).
const waitSlack = 25 * time.Millisecond

// outcome is one run as the judges see it: the stand-in's journal and how
// the client ended.
type outcome struct {
	Name    string
	Base    string
	Journal Journal
	Exit    Exit
	// Stopped: the client made more than Plan.Limit attempts and was
	// stopped.
	Stopped bool
}

type input struct {
	runs    map[string]*outcome
	all     []*outcome // every run made, in order
	profile *apispec.Profile
}

func (in input) run(name string) *outcome { return in.runs[name] }

// verdict is a judge's conclusion. show, when set, lists the attempts
// the report prints (else every attempt of the case's runs).
type verdict struct {
	status             scenarios.Status
	expected, observed string
	reason             string
	show               []shown
}

type shown struct {
	run *outcome
	at  Attempt
}

func pass(expected, observed string) verdict {
	return verdict{status: scenarios.Pass, expected: expected, observed: observed}
}

func failf(status scenarios.Status, expected, format string, args ...any) verdict {
	obs := fmt.Sprintf(format, args...)
	return verdict{status: status, expected: expected, observed: obs, reason: obs}
}

func notApplicable(format string, args ...any) verdict {
	return verdict{status: scenarios.Skip, reason: scenarios.NotApplicable + ": " + fmt.Sprintf(format, args...)}
}

func inconclusive(format string, args ...any) verdict {
	return verdict{status: scenarios.Inconclusive, reason: fmt.Sprintf(format, args...)}
}

// quoteKey shows a key field as sent, or says it was absent.
func quoteKey(a Attempt) string {
	if len(a.Keys) == 0 {
		return "no key"
	}
	if k := a.Key(); strings.HasPrefix(k, `"`) {
		return "key " + k
	}
	return "raw key " + strconv.Quote(a.Key())
}

func exitWord(x Exit) string {
	if x.Killed {
		return "was stopped"
	}
	return fmt.Sprintf("exited %d", x.Code)
}

// sameOnRetry: every attempt of the run's one call repeats attempt 1's
// key field and body.
func sameOnRetry(o *outcome, after string) verdict {
	const expected = "every retry re-sends attempt 1's key field and body byte for byte"
	at := o.Journal.Attempts
	if o.Journal.Plan.Fault.Kind == Hold && !o.Journal.GaveUp {
		return inconclusive("the client waited out the whole hold without timing out: its timeout is longer than the case's bound (--hold); nothing was provoked")
	}
	if len(at) < 2 {
		return notApplicable("the client did not retry after %s (it %s); a client may give up", after, exitWord(o.Exit))
	}
	first := at[0]
	for _, a := range at[1:] {
		switch {
		case len(a.Keys) == 0:
			return failf(scenarios.Fail, expected, "attempt %d after %s carried no key (attempt 1: %s)", a.N, after, quoteKey(first))
		case a.Key() != first.Key():
			return failf(scenarios.Fail, expected, "attempt %d after %s carried %s, attempt 1 %s: a second key for one call", a.N, after, quoteKey(a), quoteKey(first))
		case string(a.Body) != string(first.Body):
			return failf(scenarios.Fail, expected, "attempt %d after %s re-sent the key with another body (%d bytes %s, attempt 1: %d bytes %s): a changed payload under one key",
				a.N, after, len(a.Body), clip(a.Body), len(first.Body), clip(first.Body))
		}
	}
	return pass(expected, fmt.Sprintf("%d attempts, each with %s and the same %d-byte body", len(at), quoteKey(first), len(first.Body)))
}

func clip(b []byte) string {
	s := string(b)
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:120]) + "…"
	}
	return strconv.Quote(s)
}

// keyPresent: no attempt of any run lacks the key.
func keyPresent(in input) verdict {
	const expected = "every attempt of every call carries the key field"
	var bad []shown
	n := 0
	for _, o := range in.all {
		for _, a := range o.Journal.Attempts {
			n++
			if len(a.Keys) == 0 || strings.TrimSpace(a.Key()) == "" {
				bad = append(bad, shown{o, a})
			}
		}
	}
	if len(bad) > 0 {
		v := failf(scenarios.Fail, expected, "%d of %d attempts carried no key, first attempt %d of run %s (%s %s)",
			len(bad), n, bad[0].at.N, bad[0].run.Name, bad[0].at.Method, bad[0].at.Path)
		v.show = bad
		return v
	}
	return pass(expected, fmt.Sprintf("all %d attempts of %d runs carried a key", n, len(in.all)))
}

// keySyntax: every key field sent obeys the profile.
func keySyntax(in input) verdict {
	p := in.profile
	expected := "one key field line per request, " + syntaxWords(p)
	n := 0
	for _, o := range in.all {
		for _, a := range o.Journal.Attempts {
			if len(a.Keys) == 0 {
				continue // key/present's finding
			}
			n++
			if why := badSyntax(p, a.Keys); why != "" {
				v := failf(scenarios.Fail, expected, "attempt %d of run %s sent %s: %s", a.N, o.Name, quoteKey(a), why)
				v.show = []shown{{o, a}}
				return v
			}
		}
	}
	if n == 0 {
		return inconclusive("no attempt carried a key: nothing to judge")
	}
	return pass(expected, fmt.Sprintf("all %d keys sent obey it", n))
}

func syntaxWords(p *apispec.Profile) string {
	s := "an sf-string (\"…\")"
	if p.KeySyntax == apispec.Raw {
		s = "visible ASCII, raw or as an sf-string"
	}
	if p.KeyMinLen > 0 || p.KeyMaxLen > 0 {
		s += fmt.Sprintf(", %d to %d characters", max(p.KeyMinLen, 1), p.KeyMaxLen)
	}
	if p.KeyFormat != "" {
		s += ", format " + p.KeyFormat
	}
	return s + " (profile " + p.Name + ")"
}

// badSyntax says why lines break the profile's key syntax ("" if not).
func badSyntax(p *apispec.Profile, lines []string) string {
	if len(lines) != 1 {
		return fmt.Sprintf("%d field lines: the field must appear once", len(lines))
	}
	v := strings.TrimSpace(lines[0])
	key := v
	if strings.HasPrefix(v, `"`) {
		item, err := httpsfv.UnmarshalItem(lines)
		if err != nil {
			return "not a valid sf-string: " + err.Error()
		}
		s, ok := item.Value.(string)
		if !ok {
			return "an Item that is not a String"
		}
		key = s
	} else if p.KeySyntax != apispec.Raw {
		return "a raw value: the draft (profile " + p.Name + ") wants an sf-string, the key in double quotes"
	}
	if key == "" || strings.TrimSpace(key) == "" {
		return "an empty key"
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || (c == ' ' && p.KeySyntax == apispec.Raw && !strings.HasPrefix(v, `"`)) {
			return fmt.Sprintf("character %q at %d is not printable ASCII", c, i)
		}
	}
	if p.KeyMaxLen > 0 && len(key) > p.KeyMaxLen {
		return fmt.Sprintf("%d characters, more than the profile's %d", len(key), p.KeyMaxLen)
	}
	if p.KeyMinLen > 0 && len(key) < p.KeyMinLen {
		return fmt.Sprintf("%d characters, fewer than the profile's %d", len(key), p.KeyMinLen)
	}
	if !p.KeyValid(key) {
		return "does not match the profile's key_format " + p.KeyFormat
	}
	return ""
}

// unwrap is the key of a field value: an sf-string's content, else the
// value as sent.
func unwrap(a Attempt) string {
	if item, err := httpsfv.UnmarshalItem(a.Keys); err == nil {
		if s, ok := item.Value.(string); ok {
			return s
		}
	}
	return a.Key()
}

// unique: the run's calls carry distinct keys.
func unique(o *outcome, how string) verdict {
	calls := o.Journal.Plan.Logical()
	expected := fmt.Sprintf("%d calls made %s carry %d distinct keys", calls, how, calls)
	at := o.Journal.Attempts
	if len(at) < calls {
		return inconclusive("the client made %d requests for %d calls (it %s)", len(at), calls, exitWord(o.Exit))
	}
	keys := map[string][]int{}
	for _, a := range at {
		keys[a.Key()] = append(keys[a.Key()], a.N)
	}
	if len(keys) < calls {
		var parts []string
		for _, a := range at {
			if ns := keys[a.Key()]; ns[0] == a.N {
				parts = append(parts, fmt.Sprintf("%s (attempts %s)", quoteKey(a), joinInts(ns)))
			}
		}
		return failf(scenarios.Fail, expected, "%d calls sent %d distinct key fields: %s", calls, len(keys), strings.Join(parts, ", "))
	}
	obs := fmt.Sprintf("%d requests, %d distinct keys", len(at), len(keys))
	if o.Journal.Plan.Parallel > 1 {
		// Distinct keys from calls that never overlapped say nothing of
		// calls at once (a key generator racing with itself).
		n := mostAtOnce(at)
		if n < 2 {
			return inconclusive("the client sent its %d calls one at a time, none while another was in flight (the stand-in held the first %s for the others): no calls were made at once", calls, barrierWait)
		}
		obs += fmt.Sprintf(", up to %d in flight at once", n)
	}
	return pass(expected, obs)
}

// mostAtOnce is how many of the attempts were in flight at one time, by
// their arrival and end (an attempt not ended counts as in flight to the
// end).
func mostAtOnce(at []Attempt) int {
	most := 0
	for _, a := range at {
		n := 1
		for _, b := range at {
			if b.N != a.N && !b.Start.After(a.Start) && (b.End.IsZero() || b.End.After(a.Start)) {
				n++ // b was in flight when a arrived
			}
		}
		most = max(most, n)
	}
	return most
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// unpredictable: keys of two processes share nothing, and what varies
// between a process's keys is long and not a number.
func unpredictable(in input) verdict {
	const expected = "random keys: what differs between keys is long and not a counter or a timestamp, and two processes never repeat a key"
	a, b := in.run("keys-a"), in.run("keys-b")
	ka, kb := keysOf(a), keysOf(b)
	if len(ka) < 2 || len(kb) < 2 {
		return inconclusive("the client sent %d and %d keys in its two runs: too few to compare", len(ka), len(kb))
	}
	for _, k := range ka {
		if slices.Contains(kb, k) {
			return failf(scenarios.Warn, expected, "two processes both sent key %q: a process-constant or fixed-seed generator", k)
		}
	}
	for _, keys := range [][]string{ka, kb} {
		varying := varyingParts(keys)
		short, digits := true, true
		for _, v := range varying {
			short = short && len(v) < 8
			digits = digits && v != "" && strings.Trim(v, "0123456789") == ""
		}
		switch {
		case digits:
			return failf(scenarios.Warn, expected, "keys %s differ only in digits (%s): a counter or a timestamp", quoteAll(keys), strings.Join(varying, ", "))
		case short:
			return failf(scenarios.Warn, expected, "keys %s differ in fewer than 8 characters (%s): guessable", quoteAll(keys), strings.Join(varying, ", "))
		}
	}
	return pass(expected, fmt.Sprintf("%d keys in two processes, none repeated, each differing from the others in a long non-numeric part", len(ka)+len(kb)))
}

func keysOf(o *outcome) []string {
	var out []string
	for _, a := range o.Journal.Attempts {
		if len(a.Keys) > 0 && !slices.Contains(out, unwrap(a)) {
			out = append(out, unwrap(a))
		}
	}
	return out
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

// varyingParts strips the keys' common prefix and suffix.
func varyingParts(keys []string) []string {
	pre, suf := keys[0], keys[0]
	for _, k := range keys[1:] {
		for !strings.HasPrefix(k, pre) {
			pre = pre[:len(pre)-1]
		}
		for !strings.HasSuffix(k, suf) {
			suf = suf[1:]
		}
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		v := strings.TrimPrefix(k, pre)
		if len(v) >= len(suf) {
			v = v[:len(v)-len(suf)]
		}
		out[i] = v
	}
	return out
}

// onePerCall: a run of one logical call sends one key field, whatever
// its fault (the 400 and 422 runs aside: there a client may correct the
// request and send it as a new call).
func onePerCall(in input) verdict {
	const expected = "one logical call sends one key field on all its attempts"
	retried := 0
	for _, o := range in.all {
		j := o.Journal
		if j.Plan.Logical() != 1 || j.Plan.Fault.Identical || len(j.Attempts) < 2 {
			continue
		}
		retried++
		first := j.Attempts[0]
		for _, a := range j.Attempts[1:] {
			if a.Key() != first.Key() {
				v := failf(scenarios.Fail, expected, "run %s: attempt %d of its one call sent %s, attempt 1 %s", o.Name, a.N, quoteKey(a), quoteKey(first))
				v.show = []shown{{o, first}, {o, a}}
				return v
			}
		}
	}
	if retried == 0 {
		return notApplicable("the client retried no call: no call had a second attempt to compare")
	}
	return pass(expected, fmt.Sprintf("%d runs with retries, each call with one key", retried))
}

// oneExecution: a retried lost answer ends in success with the original
// id and one execution.
func oneExecution(in input) verdict {
	const expected = "the retried call ends in success (exit 0) reporting the id of its one execution"
	judged := 0
	var last string
	for _, name := range []string{"lost-answer", "timeout"} {
		o := in.run(name)
		j := o.Journal
		if len(j.Attempts) < 2 || (j.Plan.Fault.Kind == Hold && !j.GaveUp) {
			continue
		}
		judged++
		ids := make([]string, len(j.Executions))
		for i, e := range j.Executions {
			ids[i] = e.ID
		}
		switch {
		case len(ids) > 1:
			return failf(scenarios.Fail, expected, "run %s: %d executions for one call (ids %s): its retries did not reuse the key", name, len(ids), strings.Join(ids, ", "))
		case o.Exit.Code != 0 || o.Exit.Killed:
			return failf(scenarios.Fail, expected, "run %s: the client retried but %s: a call whose answer was lost ended in failure%s", name, exitWord(o.Exit), stderrNote(o.Exit))
		case len(ids) == 1 && !slices.Equal(reported(o.Exit, j), ids):
			return failf(scenarios.Fail, expected, "run %s: the client reported %q; the call created %s", name, o.Exit.IDs, ids[0])
		}
		last = fmt.Sprintf("run %s: %d attempts, 1 execution, the client reported %s", name, len(j.Attempts), ids[0])
	}
	if judged == 0 {
		return notApplicable("the client retried neither a lost answer nor a timeout")
	}
	return pass(expected, last)
}

// standInID is an id the HTTP stand-in creates.
var standInID = regexp.MustCompile(`^id_[0-9a-f]{16}$`)

// reported are the ids the client printed, in order: a line of one word
// is an id (the contract); from a longer line, the words that are ids
// the stand-in created, so that a client printing more than the bare id
// is still read right.
func reported(x Exit, j Journal) []string {
	known := map[string]bool{}
	for _, e := range j.Executions {
		known[e.ID] = true
	}
	var ids []string
	for _, l := range x.IDs {
		words := strings.Fields(l)
		if len(words) == 1 {
			ids = append(ids, words[0])
			continue
		}
		for _, w := range words {
			if w = strings.Trim(w, `"',;:()[]{}`); known[w] || standInID.MatchString(w) {
				ids = append(ids, w)
			}
		}
	}
	return ids
}

func stderrNote(x Exit) string {
	if l := lastLine(x.Stderr); l != "" {
		return " (stderr: " + l + ")"
	}
	return ""
}

// retried: a lost answer and a timeout are each retried.
func retried(in input) verdict {
	const expected = "the client retries a call whose answer was lost, and one it timed out, under the call's key"
	var judged []string
	for _, name := range []string{"lost-answer", "timeout"} { // the lost answer always provokes
		o := in.run(name)
		j := o.Journal
		if j.Plan.Fault.Kind == Hold && !j.GaveUp {
			continue // retry/timeout says why: nothing was provoked
		}
		if len(j.Attempts) < 2 {
			return failf(scenarios.Warn, expected, "run %s: the client gave up after one attempt (it %s)%s: the call's outcome stays unknown to it", name, exitWord(o.Exit), stderrNote(o.Exit))
		}
		judged = append(judged, fmt.Sprintf("run %s: %d attempts", name, len(j.Attempts)))
	}
	return pass(expected, strings.Join(judged, "; "))
}

// noIdenticalResend: after a 400 or 422 the identical request is not
// sent again.
func noIdenticalResend(o *outcome, status int) verdict {
	expected := fmt.Sprintf("after a %d the client sends the identical request (key field and body) no more", status)
	at := o.Journal.Attempts
	if len(at) == 0 {
		return inconclusive("no attempt")
	}
	first := at[0]
	var again []int
	for _, a := range at[1:] {
		if a.Key() == first.Key() && string(a.Body) == string(first.Body) {
			again = append(again, a.N)
		}
	}
	if len(again) > 0 {
		return failf(scenarios.Fail, expected, "after a %d the client re-sent the identical request %d more times (attempts %s)", status, len(again), joinInts(again))
	}
	obs := fmt.Sprintf("one attempt got %d; the client %s", status, exitWord(o.Exit))
	if len(at) > 1 {
		obs += fmt.Sprintf(", after %d corrected attempts", len(at)-1)
	}
	return pass(expected, obs)
}

// retryAfterHonoured: the attempt after an answer with Retry-After comes
// no sooner than it says.
func retryAfterHonoured(in input) verdict {
	const expected = "the next attempt starts no sooner than Retry-After after the answer that carried it"
	seen, carried := 0, 0
	for _, name := range []string{"in-flight-409", "rate-limited-429", "status-503"} {
		o := in.run(name)
		at := o.Journal.Attempts
		for _, a := range at {
			if a.RetryAfter > 0 {
				carried++
			}
		}
		for i := 0; i+1 < len(at); i++ {
			ra := at[i].RetryAfter
			if ra <= 0 || at[i].End.IsZero() {
				continue
			}
			seen++
			wait := at[i+1].Start.Sub(at[i].End)
			if wait < time.Duration(ra)*time.Second-retryAfterSlack {
				v := failf(scenarios.Warn, expected, "run %s: attempt %d came %s after attempt %d's %d with Retry-After: %d",
					name, at[i+1].N, roundMS(wait), at[i].N, at[i].Status, ra)
				v.show = []shown{{o, at[i]}, {o, at[i+1]}}
				return v
			}
		}
	}
	if carried == 0 {
		return notApplicable("no answer carried Retry-After (a gRPC status has none)")
	}
	if seen == 0 {
		return inconclusive("no attempt followed an answer with Retry-After: the client retried none of the 409, 429 and 503")
	}
	return pass(expected, fmt.Sprintf("%d retries after Retry-After: %d, each waited", seen, RetryAfter))
}

// bounded: a persistent 503 ends in a bounded number of attempts with
// growing waits, and in failure.
func bounded(in input) verdict {
	o := in.run("persistent-503")
	expected := fmt.Sprintf("at most %d attempts with waits that grow (not all under %s, not all the same), then the call reported failed", maxAttempts, noBackoff)
	at := o.Journal.Attempts
	if o.Stopped {
		return failf(scenarios.Warn, expected, "the client made more than %d attempts under a persistent 503 and was stopped: its retries are unbounded", maxAttempts)
	}
	if o.Exit.Code == 0 && !o.Exit.Killed {
		return failf(scenarios.Warn, expected, "every attempt got 503, yet the client exited 0 (reported %q)", o.Exit.IDs)
	}
	if len(at) < 2 {
		return notApplicable("the client did not retry the 503 (it %s after one attempt): no retries to bound or back off; a client may give up", exitWord(o.Exit))
	}
	var waits []time.Duration
	for i := 0; i+1 < len(at); i++ {
		waits = append(waits, roundMS(at[i+1].Start.Sub(at[i].End)))
	}
	// Jittered back-off waits at random: only what no back-off policy
	// does is a finding, so that a correct client never flaps; and growth
	// is only seen when a later wait clearly outlasts an earlier one.
	grows := func() bool {
		for i, w := range waits {
			for _, later := range waits[i+1:] {
				if later > w*constantBackoff/100+waitSlack {
					return true
				}
			}
		}
		return false
	}
	switch {
	case secondLongest(waits) < noBackoff:
		return failf(scenarios.Warn, expected, "the client retried a 503 %d times without waiting (waits %s): no back-off", len(waits), durations(waits))
	case len(waits) >= 3 && slices.Max(waits) <= slices.Min(waits)*constantBackoff/100+waitSlack:
		return failf(scenarios.Warn, expected, "the waits between attempts (%s) stay the same: a constant back-off, not a growing one", durations(waits))
	case len(waits) < 3 && !grows():
		return inconclusive("%d attempts, then the client %s: bounded, but the waits (%s) are too few to tell a growing back-off from a constant or jittered one (3 or more, or a later wait clearly longer, tell)",
			len(at), exitWord(o.Exit), durations(waits))
	}
	return pass(expected, fmt.Sprintf("%d attempts, waits %s, then the client %s", len(at), durations(waits), exitWord(o.Exit)))
}

// secondLongest is the longest wait but one (the only one, of one): a
// single long wait among none is the machine stalling, not a back-off.
func secondLongest(waits []time.Duration) time.Duration {
	if len(waits) < 2 {
		return slices.Max(waits)
	}
	s := slices.Sorted(slices.Values(waits))
	return s[len(s)-2]
}

func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, ", ")
}

// waited409: a 409 in flight is retried to success.
func waited409(in input) verdict {
	o := in.run("in-flight-409")
	const expected = "the client waits out the 409, retries, and reports the call's id (exit 0)"
	j := o.Journal
	if len(j.Attempts) < 2 {
		return failf(scenarios.Warn, expected, "the client reported the 409 of a request in flight as the call's failure without retrying (it %s)%s", exitWord(o.Exit), stderrNote(o.Exit))
	}
	if o.Exit.Code != 0 || o.Exit.Killed {
		return failf(scenarios.Warn, expected, "the client retried after the 409 but %s%s", exitWord(o.Exit), stderrNote(o.Exit))
	}
	if len(j.Executions) == 1 && !slices.Equal(reported(o.Exit, j), []string{j.Executions[0].ID}) {
		return failf(scenarios.Warn, expected, "the client reported %q; the call created %s", o.Exit.IDs, j.Executions[0].ID)
	}
	return pass(expected, fmt.Sprintf("%d attempts, then exit 0 with the call's id", len(j.Attempts)))
}

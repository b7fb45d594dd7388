package scenarios

import "strings"

// Quick retries (the normal body, an error variant) are judged by when they
// were answered, not sent: see inTTLAnswered. Retries that may run the slow
// variant again keep inTTL's send-time rule, since their answer comes late
// by design.

// inTTLAnswered is inTTL judging the retries by when they were answered:
// the server handled a request no later than it answered it, while its
// send time says little when the client stalled (seen: seconds between a
// request's Start and the server's work on a loaded machine). For quick
// retries, whose lookup is what is judged, this is the safe bound.
func (e *Env) inTTLAnswered(v Verdict, orig Resp, retries ...Resp) Verdict {
	x := e.inTTL(v, orig, answered(retries)...)
	if x.Status != v.Status {
		x.Reason = strings.Replace(x.Reason, "the retry was sent", "the retry was answered", 1)
	}
	return x
}

// answered returns rs with each Start moved to its End: the latest time
// the server can have handled each.
func answered(rs []Resp) []Resp {
	out := make([]Resp, len(rs))
	for i, r := range rs {
		r.Start = r.End
		out[i] = r
	}
	return out
}

package chaos

import (
	"net/http"
	"strconv"
)

// resetMidbody forwards, then sends the status, headers and part of the
// body (the full Content-Length announced) and resets the connection: the
// client may have seen a 2xx status but never gets the whole answer.
type resetMidbody struct{ bytes int }

func init() {
	register("reset-midbody", func(p params) (Fault, error) {
		n, err := p.intValue("bytes", -1)
		return resetMidbody{n}, err
	})
}

func (resetMidbody) Kind() string { return "reset-midbody" }

func (f resetMidbody) Serve(x *Relay) {
	u := x.Forward(x.Body)
	if u.Error != "" {
		x.Respond(u)
		return
	}
	n := f.bytes
	if n < 0 || n >= len(u.body) {
		n = len(u.body) / 2
	}
	h := x.w.Header()
	copyHeader(h, u.header)
	h.Set(FaultHeader, x.ev.Fault)
	h.Set("Content-Length", strconv.Itoa(len(u.body)))
	x.w.WriteHeader(u.Status)
	_, _ = x.w.Write(u.body[:n])
	if fl, ok := x.w.(http.Flusher); ok {
		fl.Flush()
	}
	x.ev.Status = u.Status
	x.Abort("rst")
}

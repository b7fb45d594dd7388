package chaos

import (
	"net"
	"time"
)

// deadlines keeps what a connection's read and write deadlines were last
// set to, so that the per-request re-arming can skip a deadline that is
// already within 1/32 of its span of the wanted one. Each set is a runtime
// timer update; the pumped path made five per request, about as much of
// the proxy's CPU at saturation (2.5%) as its idle-connection probe.
type deadlines struct{ read, write time.Time }

// near reports whether at is within span/32 of want.
func near(at, want time.Time, span time.Duration) bool {
	d := at.Sub(want)
	return d <= span/32 && d >= -span/32
}

// armRead sets the read deadline to about now+span.
func (d *deadlines) armRead(c net.Conn, span time.Duration) {
	if want := time.Now().Add(span); !near(d.read, want, span) {
		d.setRead(c, want)
	}
}

// armWrite sets the write deadline to about now+span.
func (d *deadlines) armWrite(c net.Conn, span time.Duration) {
	if want := time.Now().Add(span); !near(d.write, want, span) {
		d.setWrite(c, want)
	}
}

// arm sets both deadlines to about now+span.
func (d *deadlines) arm(c net.Conn, span time.Duration) {
	want := time.Now().Add(span)
	r, w := !near(d.read, want, span), !near(d.write, want, span)
	switch {
	case r && w:
		d.set(c, want)
	case r:
		d.setRead(c, want)
	case w:
		d.setWrite(c, want)
	}
}

// setRead, setWrite and set are exact (a zero time clears).
func (d *deadlines) setRead(c net.Conn, t time.Time) {
	_ = c.SetReadDeadline(t)
	d.read = t
}

func (d *deadlines) setWrite(c net.Conn, t time.Time) {
	_ = c.SetWriteDeadline(t)
	d.write = t
}

func (d *deadlines) set(c net.Conn, t time.Time) {
	_ = c.SetDeadline(t)
	d.read, d.write = t, t
}

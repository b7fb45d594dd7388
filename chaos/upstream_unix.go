//go:build unix

package chaos

import (
	"net"
	"syscall"
)

// openProbe tells whether an idle upstream connection can take a request:
// a peek that finds neither data nor EOF. Sending on one the upstream
// already closed would fail an exchange that never reached it. The raw
// connection and the callback are made once per connection, so a probe
// allocates nothing.
type openProbe struct {
	raw  syscall.RawConn
	fn   func(fd uintptr) bool
	open bool
	b    [1]byte
}

// newOpenProbe returns nil for connections without a descriptor (TLS):
// there the stale case shows as that exchange's error.
func newOpenProbe(c net.Conn) *openProbe {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &openProbe{raw: raw}
	p.fn = func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		p.open = n <= 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait for readiness
	}
	return p
}

func (p *openProbe) stillOpen() bool {
	if p == nil {
		return true
	}
	p.open = false
	return p.raw.Read(p.fn) == nil && p.open
}

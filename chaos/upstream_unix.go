//go:build unix

package chaos

import (
	"net"
	"syscall"
)

// stillOpen reports whether an idle upstream connection can take a
// request: a peek that finds neither data nor EOF. Sending on one the
// upstream already closed would fail an exchange that never reached it.
func stillOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true // TLS: the stale case shows as an exchange error
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = n <= 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
		return true // never wait for readiness
	})
	return err == nil && open
}

package freeport

import "net"

// Loopback returns a TCP port on 127.0.0.1 that was free when asked (the
// caller binds it soon after; another process may take it in between).
func Loopback() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

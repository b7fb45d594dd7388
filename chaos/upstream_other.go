//go:build !unix

package chaos

import "net"

// openProbe cannot peek here; a connection the upstream closed shows as
// that exchange's error.
type openProbe struct{}

func newOpenProbe(net.Conn) *openProbe { return nil }

func (*openProbe) stillOpen() bool { return true }

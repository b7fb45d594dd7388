package chaos

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Server is a proxy listening on a loopback port, for in-process use (the
// chaos driver, the LOST cases).
type Server struct {
	URL string // base URL of the proxy, e.g. http://127.0.0.1:41234
	srv *http.Server
	ln  net.Listener
}

// Listen serves p on a free port of 127.0.0.1.
func Listen(p *Proxy) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln,
		srv: &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops accepting, lets attempts in progress finish (up to 5s) and
// then closes what is left.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, s.srv.Close())
	}
	return nil
}

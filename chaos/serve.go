package chaos

import (
	"net"
	"sync"
	"time"
)

// Server is a proxy listening on a TCP address, served by the proxy's own
// HTTP/1.1 loop (conn.go) rather than net/http's server: the chaos
// driver, the LOST cases and the standalone proxy use it. (The Proxy is
// also an http.Handler for mounting in any net/http server.)
type Server struct {
	URL string // base URL of the proxy, e.g. http://127.0.0.1:41234
	p   *Proxy
	ln  net.Listener

	wg      sync.WaitGroup // the accept loop and one per connection
	mu      sync.Mutex
	conns   map[*clientConn]struct{}
	closing bool
}

// Listen serves p on a free port of 127.0.0.1.
func Listen(p *Proxy) (*Server, error) { return ListenOn(p, "127.0.0.1:0") }

// ListenOn serves p on addr (host:port; port 0 picks a free one).
func ListenOn(p *Proxy, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), p: p, ln: ln, conns: map[*clientConn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

func (s *Server) accept() {
	defer s.wg.Done()
	for delay := time.Duration(0); ; {
		conn, err := s.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				// Out of file descriptors or similar: back off, as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return // closed
		}
		delay = 0
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(true)
			_ = tc.SetKeepAlivePeriod(30 * time.Second)
		}
		c := &clientConn{s: s, conn: conn, remote: conn.RemoteAddr().String(), pumps: s.p.pumpable()}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			_ = conn.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// begin marks c busy with an attempt; false when the server is closing.
func (s *Server) begin(c *clientConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.active = true
	return !s.closing
}

// end marks c idle; false when the server is closing (c then ends).
func (s *Server) end(c *clientConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.active = false
	return !s.closing
}

func (s *Server) forget(c *clientConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// Close stops accepting, closes idle connections, lets attempts in
// progress finish (up to 5s) and then closes what is left; it returns
// once every connection's goroutine has ended (an attempt still
// forwarding is bounded by WithTimeout).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	err := s.ln.Close()
	for c := range s.conns {
		if !c.active {
			_ = c.conn.Close()
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.mu.Lock()
		for c := range s.conns {
			_ = c.conn.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return err
}

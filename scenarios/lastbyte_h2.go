package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Session is one HTTP/2 connection of a last-byte burst and the
// requests it carries as streams.
type h2Session struct {
	conn net.Conn
	fr   *http2.Framer // reads the server's frames
	wmu  sync.Mutex    // writes: the burst's and the reader's acks
	u    *url.URL
	reqs []*lbReq
	ids  map[uint32]*lbReq

	maxFrame uint32
}

// h2Window is the flow-control window this client grants the server, per
// stream and for the connection: answers never wait for a WINDOW_UPDATE.
const h2Window = 1 << 30

// h2Sessions opens one HTTP/2 connection per base of reqs when the target
// is https and TLS negotiates h2 on every one, and settles each
// connection's settings. It returns nil (use HTTP/1.1) when h2 is not
// negotiated or the server's settings cannot take the burst in one flight
// (too many streams, bodies beyond its flow-control windows); an error
// when a connection could not be opened. Nothing is sent but the
// connection preface and settings either way.
func (e *Env) h2Sessions(ctx context.Context, reqs []*lbReq, deadline time.Time) ([]*h2Session, error) {
	if !strings.HasPrefix(e.Target.BaseURL, "https://") {
		return nil, nil
	}
	byBase := map[string]*h2Session{}
	var sessions []*h2Session
	closeAll := func() {
		for _, s := range sessions {
			s.conn.Close()
		}
	}
	for _, q := range reqs {
		base := q.r.Base
		if base == "" {
			base = e.Target.BaseURL
		}
		s := byBase[base]
		if s == nil {
			u, err := url.Parse(q.x.Request.URL)
			if err != nil {
				closeAll()
				return nil, err
			}
			conn, proto, err := e.dialBase(ctx, base, []string{"h2", "http/1.1"}, deadline)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("opening its connection: %v", err)
			}
			s = &h2Session{conn: conn, u: u, ids: map[uint32]*lbReq{}}
			sessions = append(sessions, s)
			byBase[base] = s
			if proto != "h2" {
				closeAll()
				return nil, nil
			}
		}
		s.ids[uint32(2*len(s.reqs)+1)] = q
		s.reqs = append(s.reqs, q)
	}
	for _, s := range sessions {
		if fits, err := s.handshake(deadline); err != nil || !fits {
			closeAll()
			if err != nil {
				return nil, fmt.Errorf("HTTP/2 settings: %v", err)
			}
			return nil, nil
		}
	}
	return sessions, nil
}

// handshake writes the preface and this client's settings, reads the
// server's settings and acknowledges them; fits is false when they cannot
// take s's streams at once.
func (s *h2Session) handshake(deadline time.Time) (fits bool, err error) {
	_ = s.conn.SetDeadline(deadline)
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	w := http2.NewFramer(&buf, nil)
	_ = w.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window})
	_ = w.WriteWindowUpdate(0, h2Window)
	if _, err := s.conn.Write(buf.Bytes()); err != nil {
		return false, err
	}
	s.fr = http2.NewFramer(nil, s.conn)
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	maxStreams, window := uint32(1<<31-1), uint32(65535)
	s.maxFrame = 16384
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return false, err
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			continue
		}
		_ = sf.ForeachSetting(func(st http2.Setting) error {
			switch st.ID {
			case http2.SettingMaxConcurrentStreams:
				maxStreams = st.Val
			case http2.SettingInitialWindowSize:
				window = st.Val
			case http2.SettingMaxFrameSize:
				s.maxFrame = st.Val
			}
			return nil
		})
		break
	}
	if err := s.write(func(w *http2.Framer) error { return w.WriteSettingsAck() }); err != nil {
		return false, err
	}
	total := 0
	for _, q := range s.reqs {
		n := len(q.x.Request.Body)
		if uint32(n) > window {
			return false, nil
		}
		total += n
	}
	// The connection's send window starts at 65,535 whatever the settings.
	return uint32(len(s.reqs)) <= maxStreams && total <= 65535, nil
}

// write writes the frames f produces in one write on the connection.
func (s *h2Session) write(f func(*http2.Framer) error) error {
	var buf bytes.Buffer
	if err := f(http2.NewFramer(&buf, nil)); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.conn.Write(buf.Bytes())
	return err
}

// h2Burst writes every stream's headers and all but the last body byte,
// lets the server take them in, then writes every stream's final DATA
// frame, one write per connection, and reads the answers.
func (e *Env) h2Burst(ctx context.Context, sessions []*h2Session, reqs []*lbReq, deadline time.Time) []Resp {
	stop := context.AfterFunc(ctx, func() {
		for _, s := range sessions {
			s.conn.Close()
		}
	})
	defer stop()
	c := e.oracle
	global := c != nil && c.global
	var wg sync.WaitGroup
	for _, s := range sessions {
		for _, q := range s.reqs {
			if global {
				c.enter(ctx, e, scopeOf(q.r))
			}
			q.x.Start = time.Now()
			q.resp.Start = q.x.Start
		}
		err := s.write(func(w *http2.Framer) error {
			for id, q := range s.streams() {
				if err := s.writeHead(w, id, q); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			for _, q := range s.reqs {
				q.resp.Err, q.resp.End = err, time.Now()
			}
		}
		wg.Go(func() {
			s.read()
			s.conn.Close()
			if global {
				for range s.reqs {
					c.leave()
				}
			}
		})
	}
	settle(ctx)
	for _, s := range sessions {
		_ = s.write(func(w *http2.Framer) error { // a failure shows in the read
			for id, q := range s.streams() {
				b := q.x.Request.Body
				if err := w.WriteData(id, true, b[len(b)-1:]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	wg.Wait()
	return e.recordBurst(reqs, " (last-byte sync)")
}

// streams yields s's streams in the order they were opened.
func (s *h2Session) streams() func(yield func(uint32, *lbReq) bool) {
	return func(yield func(uint32, *lbReq) bool) {
		for i, q := range s.reqs {
			if !yield(uint32(2*i+1), q) {
				return
			}
		}
	}
}

// writeHead writes stream id's HEADERS and its body but the last byte.
func (s *h2Session) writeHead(w *http2.Framer, id uint32, q *lbReq) error {
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	u, err := url.Parse(q.x.Request.URL)
	if err != nil {
		return err
	}
	fields := []hpack.HeaderField{
		{Name: ":method", Value: q.x.Request.Method},
		{Name: ":scheme", Value: u.Scheme},
		{Name: ":authority", Value: u.Host},
		{Name: ":path", Value: u.RequestURI()},
	}
	for k, vs := range q.x.Request.Header {
		switch lk := strings.ToLower(k); lk {
		case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length":
		default:
			for _, v := range vs {
				fields = append(fields, hpack.HeaderField{Name: lk, Value: v})
			}
		}
	}
	body := q.x.Request.Body
	fields = append(fields, hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))})
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return err
		}
	}
	if uint32(block.Len()) > s.maxFrame {
		return errors.New("request headers larger than one HTTP/2 frame")
	}
	if err := w.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}); err != nil {
		return err
	}
	for rest := body[:len(body)-1]; len(rest) > 0; {
		n := min(len(rest), int(s.maxFrame))
		if err := w.WriteData(id, false, rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// read reads the server's frames until every stream of s has its answer
// or the connection fails; a stream left without an answer gets the error.
func (s *h2Session) read() {
	pending := 0
	for _, q := range s.reqs {
		if q.resp.End.IsZero() {
			pending++
		}
	}
	finish := func(q *lbReq, err error) {
		if q.resp.End.IsZero() {
			q.resp.Err, q.resp.End = err, time.Now()
			pending--
		}
	}
	for pending > 0 {
		f, err := s.fr.ReadFrame()
		if err != nil {
			for _, q := range s.reqs {
				finish(q, err)
			}
			return
		}
		q := s.ids[f.Header().StreamID]
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if q == nil {
				continue
			}
			if q.resp.Status == 0 {
				code, _ := strconv.Atoi(f.PseudoValue("status"))
				if code < 200 { // 1xx: the final answer follows
					continue
				}
				q.resp.Status, q.resp.Header = code, http.Header{}
				for _, hf := range f.RegularFields() {
					q.resp.Header.Add(http.CanonicalHeaderKey(hf.Name), hf.Value)
				}
			}
			if f.StreamEnded() {
				finish(q, nil)
			}
		case *http2.DataFrame:
			if q == nil {
				continue
			}
			if room := maxBody - len(q.resp.Body); room > 0 {
				d := f.Data()
				q.resp.Body = append(q.resp.Body, d[:min(len(d), room)]...)
			}
			if f.StreamEnded() {
				finish(q, nil)
			}
		case *http2.RSTStreamFrame:
			if q != nil {
				finish(q, fmt.Errorf("HTTP/2 stream reset by the server: %v", f.ErrCode))
			}
		case *http2.GoAwayFrame:
			for id, q := range s.ids {
				if id > f.LastStreamID {
					finish(q, fmt.Errorf("HTTP/2 GOAWAY (%v) before this stream was processed", f.ErrCode))
				}
			}
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = s.write(func(w *http2.Framer) error { return w.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = s.write(func(w *http2.Framer) error { return w.WritePing(true, f.Data) })
			}
		}
	}
}

package wire

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
	reqs []*lbReq
	ids  map[uint32]*lbReq

	maxFrame uint32
}

// h2Window is the flow-control window this client grants the server, per
// stream and for the connection: answers never wait for a WINDOW_UPDATE.
const h2Window = 1 << 30

// h2ConnWindow is what a connection may send before the server's first
// WINDOW_UPDATE, whatever its settings (RFC 9113 6.9.2): the bodies of the
// streams one connection holds back must fit in it.
const h2ConnWindow = 65535

// h2Limits are the server's settings that bound one connection's burst.
type h2Limits struct {
	streams uint32 // SETTINGS_MAX_CONCURRENT_STREAMS
	window  uint32 // SETTINGS_INITIAL_WINDOW_SIZE: one stream's body
}

// h2Sessions opens the HTTP/2 connections of a burst: h2 by ALPN where
// the target is https, h2c with prior knowledge where it is http and
// speaks HTTP/2 only (Target.HTTP2). Each base's requests are spread over
// as few connections as the server's settings allow (its stream limit,
// the flow-control windows their held-back bodies must fit in). It
// returns nil sessions and no why when the burst should go over HTTP/1.1
// instead (plain http without Target.HTTP2, or an https server that does
// not negotiate h2 or cannot take a body in one flight); a why when
// HTTP/2 is required but cannot carry the burst; an error when a
// connection could not be opened. Nothing is sent but the connection
// preface and settings either way.
func (lb LastByte) h2Sessions(ctx context.Context, reqs []*lbReq, deadline time.Time) (sessions []*h2Session, why string, err error) {
	h2only := lb.Target.HTTP2
	if !h2only && !strings.HasPrefix(lb.Target.BaseURL, "https://") {
		return nil, "", nil
	}
	closeAll := func() {
		for _, s := range sessions {
			s.conn.Close()
		}
	}
	// cannot ends the attempt: HTTP/1.1 where it may be spoken, else why.
	cannot := func(format string, args ...any) ([]*h2Session, string, error) {
		closeAll()
		if !h2only {
			return nil, "", nil
		}
		return nil, "HTTP/2 cannot carry it: " + fmt.Sprintf(format, args...), nil
	}
	var bases []string
	byBase := map[string][]*lbReq{}
	for _, q := range reqs {
		if byBase[q.base] == nil {
			bases = append(bases, q.base)
		}
		byBase[q.base] = append(byBase[q.base], q)
	}
	for _, base := range bases {
		for rest := byBase[base]; len(rest) > 0; {
			conn, proto, err := lb.dialBase(ctx, base, []string{"h2", "http/1.1"}, deadline)
			if err != nil {
				closeAll()
				return nil, "", fmt.Errorf("opening its connection: %v", err)
			}
			if proto == "" { // plain TCP: h2c with prior knowledge
				proto = "h2"
			}
			s := &h2Session{conn: conn, ids: map[uint32]*lbReq{}}
			sessions = append(sessions, s)
			if proto != "h2" {
				return cannot("TLS to %s negotiated %q, not h2", base, proto)
			}
			lim, err := s.handshake(deadline)
			if err != nil {
				closeAll()
				return nil, "", fmt.Errorf("HTTP/2 settings: %v", err)
			}
			n, total := 0, 0
			for n < len(rest) && uint32(n) < lim.streams {
				b := len(rest[n].x.Request.Body)
				if uint32(b) > lim.window || b > h2ConnWindow {
					return cannot("a %d-byte body is beyond the server's flow-control window (%d bytes a stream, %d a connection)", b, lim.window, h2ConnWindow)
				}
				if total+b > h2ConnWindow {
					break
				}
				total += b
				n++
			}
			if n == 0 {
				return cannot("the server allows no concurrent stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)")
			}
			for _, q := range rest[:n] {
				s.ids[uint32(2*len(s.reqs)+1)] = q
				s.reqs = append(s.reqs, q)
			}
			rest = rest[n:]
		}
	}
	return sessions, "", nil
}

// handshake writes the preface and this client's settings, reads the
// server's settings and acknowledges them, and returns the limits they set
// on a burst.
func (s *h2Session) handshake(deadline time.Time) (h2Limits, error) {
	_ = s.conn.SetDeadline(deadline)
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	w := http2.NewFramer(&buf, nil)
	_ = w.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window})
	_ = w.WriteWindowUpdate(0, h2Window)
	if _, err := s.conn.Write(buf.Bytes()); err != nil {
		return h2Limits{}, err
	}
	s.fr = http2.NewFramer(nil, s.conn)
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	lim := h2Limits{streams: 1<<31 - 1, window: 65535}
	s.maxFrame = 16384
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			return h2Limits{}, err
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			continue
		}
		_ = sf.ForeachSetting(func(st http2.Setting) error {
			switch st.ID {
			case http2.SettingMaxConcurrentStreams:
				lim.streams = st.Val
			case http2.SettingInitialWindowSize:
				lim.window = st.Val
			case http2.SettingMaxFrameSize:
				s.maxFrame = st.Val
			}
			return nil
		})
		break
	}
	if err := s.write(func(w *http2.Framer) error { return w.WriteSettingsAck() }); err != nil {
		return h2Limits{}, err
	}
	return lim, nil
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
func (lb LastByte) h2Burst(ctx context.Context, sessions []*h2Session, reqs []*lbReq, deadline time.Time) {
	stop := context.AfterFunc(ctx, func() {
		for _, s := range sessions {
			s.conn.Close()
		}
	})
	defer stop()
	var wg sync.WaitGroup
	for _, s := range sessions {
		for _, q := range s.reqs {
			q.done = lb.around(q.i)
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
			for _, q := range s.reqs {
				q.done()
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
			if room := MaxBody - len(q.resp.Body); room > 0 {
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

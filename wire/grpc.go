package wire

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// The error details of AIP-193 (ErrorInfo, BadRequest, RetryInfo, ...)
	// decode in an error's google.rpc.Status.
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/idemcheck/idemcheck/apispec"
)

// GRPC carries the requests of a gRPC target (base_url grpc://host:port,
// grpcs:// for TLS). A request is the Exchange Build makes of an
// operation with rpc: method POST, path /package.Service/Method, body the
// request message in protojson, header the metadata. GRPC resolves the
// method by server reflection (v1, else v1alpha) or from the target's
// protoset, builds the message as a dynamic one (each distinct body once,
// each distinct answer decoded once: messageMemo), calls it once (no
// retries) and records the answer in HTTP terms so that the engine and
// the reports read it unchanged: status the HTTP status google.rpc.Code
// maps the code to, header the response metadata and trailers plus
// Grpc-Status (the code's number, as on the wire) and Grpc-Message, body
// the response message in protojson, or the google.rpc.Status of an error.
// A call the server never answered (no header, no trailer) is a transport
// error, as an HTTP request without a response is.
//
// Each server a call is addressed to (the base URL, every replica) gets a
// connection of its own, as a client behind no balancer would have. The
// methods are resolved once, on the first server asked: replicas serve
// one API.
type GRPC struct {
	t *apispec.Target
	// Timeout bounds each call (zero: only the caller's context), as
	// http.Client.Timeout bounds an HTTP request.
	Timeout time.Duration
	// untimed: no stats handler on the connections (Untimed).
	untimed bool

	mu      sync.Mutex
	conns   map[string]*grpc.ClientConn // by scheme://host
	files   *protoregistry.Files        // the protoset's, once read
	methods map[string]*grpcMethod

	// routes remembers where each URL called goes (up to maxMemo URLs),
	// so that a repeated call parses nothing and takes no lock but a
	// read lock; Close forgets them with the connections.
	rmu    sync.RWMutex
	routes map[string]route
	gen    uint64 // Closes so far: a route found before one is not kept
}

// route is where a call's URL goes: its server's connection and its
// method.
type route struct {
	conn *grpc.ClientConn
	path string
	m    *grpcMethod
}

// NewGRPC is the carrier of t's calls; it dials each server when first
// used. Close ends its connections.
func NewGRPC(t *apispec.Target) *GRPC {
	return &GRPC{t: t, conns: map[string]*grpc.ClientConn{}, methods: map[string]*grpcMethod{}}
}

// Close closes the connections, if any; a later call dials again.
func (g *GRPC) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.rmu.Lock()
	clear(g.routes)
	g.gen++
	g.rmu.Unlock()
	for at, c := range g.conns {
		_ = c.Close()
		delete(g.conns, at)
	}
}

// client is the connection to the server of u (grpc://host:port/...),
// dialled on first use.
func (g *GRPC) client(u *url.URL) (*grpc.ClientConn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at := u.Scheme + "://" + u.Host
	if c := g.conns[at]; c != nil {
		return c, nil
	}
	creds := insecure.NewCredentials()
	if u.Scheme == "grpcs" {
		tc := g.t.TLSConfig().Clone()
		if tc == nil {
			tc = &tls.Config{}
		}
		creds = credentials.NewTLS(tc)
	}
	// No retry policy from a service config: a call is sent once, as
	// NoReplay makes an HTTP request; gRPC's transparent retries only
	// re-send what never reached the server.
	// An answer is received up to MaxBody, as an HTTP body is buffered
	// (gRPC's own default is the same 4 MiB); a larger one is refused by
	// the client, never taken for the server's answer (call).
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithDisableRetry(), grpc.WithDisableServiceConfig(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxBody))}
	if !g.untimed {
		opts = append(opts, grpc.WithStatsHandler(callStats{}))
	}
	conn, err := grpc.NewClient("passthrough:///"+u.Host, opts...)
	if err != nil {
		return nil, err
	}
	g.conns[at] = conn
	return conn, nil
}

// Name implements Carrier.
func (*GRPC) Name() string { return "gRPC" }

// Build implements Carrier: Build with the carrier's target (the key in
// its metadata entry or its message field).
func (g *GRPC) Build(op *apispec.Operation, r Request) Exchange { return Build(g.t, op, r) }

// Reach implements Carrier: the connection to base's server is ready.
func (g *GRPC) Reach(ctx context.Context, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	if err := g.reachable(ctx, u); err != nil {
		return "", err
	}
	return "gRPC", nil // over HTTP/2, as every gRPC call is: the protocol is the RPC's
}

// Warm implements Warmer: a carrier of its own, its connection to each
// of bases (the base URL when none) ready. A gRPC connection multiplexes
// every call of a burst, so n does not matter.
func (g *GRPC) Warm(ctx context.Context, _ int, bases ...string) Carrier {
	if len(bases) == 0 {
		bases = []string{g.t.BaseURL}
	}
	w := NewGRPC(g.t)
	w.Timeout = g.Timeout
	for _, b := range bases {
		_, _ = w.Reach(ctx, b) // a failed warm-up leaves the burst's calls to fail as they would
	}
	return w
}

// Untimed implements Untimed: a carrier of its own whose connections
// carry no stats handler. Its calls are not timed at the send (Resp.Sent
// zero, WithSent never called), and whether the server answered is read
// from the answer's metadata: the same answers, for less per call (no
// stats event of grpc-go's and no copy of its metadata).
func (g *GRPC) Untimed() Carrier {
	u := NewGRPC(g.t)
	u.Timeout, u.untimed = g.Timeout, true
	return u
}

// Do implements Carrier.
func (g *GRPC) Do(ctx context.Context, x Exchange) (Resp, Exchange) {
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	x.Start = time.Now()
	resp := Resp{Start: x.Start}
	status, header, body, binary, sent, err := g.call(ctx, x.Request)
	resp.End = time.Now()
	x.Duration = resp.End.Sub(x.Start)
	resp.Sent = sent
	if err != nil {
		resp.Err = err
		x.Error = err.Error()
		return resp, x
	}
	resp.Status, resp.Header, resp.Body, resp.Binary = status, header, body, binary
	x.Response = &ExchangeResponse{Status: status, Header: header, Body: body}
	return resp, x
}

// callKey keys a call's observation in its context.
type callKey struct{}

// observed is what the stats handler saw of one call.
type observed struct {
	sent atomic.Int64 // UnixNano of the request message's write
	// header and trailer are the answer's metadata, as grpc-go hands them
	// to a stats handler (its own copies, what grpc.Header and
	// grpc.Trailer would copy again); answered: either came back.
	mu              sync.Mutex
	header, trailer metadata.MD
	answered        bool
}

// answer is what the server sent back: whether it answered at all, and
// its header and trailer metadata.
func (o *observed) answer() (answered bool, header, trailer metadata.MD) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.answered, o.header, o.trailer
}

// callStats records, per call, when its message went out, whether the
// server answered at all and its metadata.
type callStats struct{}

func (callStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (callStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (callStats) HandleConn(context.Context, stats.ConnStats) {}
func (callStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	o, _ := ctx.Value(callKey{}).(*observed)
	if o == nil {
		return
	}
	switch s := s.(type) {
	case *stats.OutPayload:
		if o.sent.CompareAndSwap(0, s.SentTime.UnixNano()) {
			notifySent(ctx)
		}
	case *stats.InHeader:
		o.mu.Lock()
		o.answered, o.header = true, s.Header
		o.mu.Unlock()
	case *stats.InTrailer:
		o.mu.Lock()
		o.answered, o.trailer = true, s.Trailer
		o.mu.Unlock()
	}
}

// call makes the call r describes.
func (g *GRPC) call(ctx context.Context, r ExchangeRequest) (httpStatus int, h http.Header, body, binary []byte, sent time.Time, err error) {
	rt, err := g.route(ctx, r.URL)
	if err != nil {
		return 0, nil, nil, nil, sent, err
	}
	m := rt.m
	in, err := m.memo.request(m.md, r.Body)
	if err != nil {
		return 0, nil, nil, nil, sent, err
	}
	out := &emptypb.Empty{} // the answer's bytes, undecoded (messageMemo)
	var cerr error
	var answered bool
	var hdr, trl metadata.MD
	if g.untimed {
		cerr = rt.conn.Invoke(metadata.NewOutgoingContext(ctx, outgoing(r.Header)), rt.path, in, out, grpc.Header(&hdr), grpc.Trailer(&trl))
		// A gRPC answer's first frame carries its content-type, which
		// grpc-go keeps in the header metadata (in the trailer's of a
		// trailers-only answer): both are empty only when no gRPC answer
		// came, as the stats handler would have seen.
		answered = len(hdr) > 0 || len(trl) > 0
	} else {
		o := &observed{}
		cerr = rt.conn.Invoke(metadata.NewOutgoingContext(context.WithValue(ctx, callKey{}, o), outgoing(r.Header)), rt.path, in, out)
		answered, hdr, trl = o.answer()
		if n := o.sent.Load(); n != 0 {
			sent = time.Unix(0, n)
		}
	}
	if cerr != nil && !answered {
		return 0, nil, nil, nil, sent, fmt.Errorf("no gRPC answer: %w", cerr)
	}
	if st, _ := status.FromError(cerr); st.Code() == codes.ResourceExhausted && strings.HasPrefix(st.Message(), "grpc: received message") {
		// grpc-go's own refusal of an answer over the receive limit: the
		// server answered, but not with this status.
		return 0, nil, nil, nil, sent, fmt.Errorf("the answer message is over the client's %d-byte receive limit: %w", MaxBody, cerr)
	}
	var a answer
	if cerr == nil {
		if a, err = m.memo.answer(m.md, out.ProtoReflect().GetUnknown()); err != nil {
			// What grpc-go says of an answer that does not decode as the
			// method's output, had it decoded it.
			cerr = status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
		}
	}
	st := status.Convert(cerr)
	h = make(http.Header, len(hdr)+len(trl)+2)
	for _, m := range []metadata.MD{hdr, trl} {
		for k, vs := range m {
			k = canonicalNames.of(k, http.CanonicalHeaderKey)
			h[k] = append(h[k], vs...)
		}
	}
	h["Grpc-Status"] = []string{strconv.Itoa(int(st.Code()))}
	if st.Message() != "" {
		h.Set("Grpc-Message", st.Message())
	}
	if cerr == nil {
		return apispec.GRPCHTTPStatus(int(st.Code())), h, a.body, a.binary, sent, nil
	}
	msg := st.Proto()
	body, err = compactJSON(protojson.Marshal(msg))
	if err != nil { // details of a type this binary does not know
		body, err = json.Marshal(rawStatus(st))
	}
	if err != nil {
		return 0, nil, nil, nil, sent, fmt.Errorf("the answer does not encode as protojson: %v", err)
	}
	// Deterministic, as an answer message's (messageMemo.answer).
	binary, err = proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return 0, nil, nil, nil, sent, fmt.Errorf("the answer does not encode: %v", err)
	}
	return apispec.GRPCHTTPStatus(int(st.Code())), h, body, binary, sent, nil
}

// route is where a call to rawURL goes: the connection to its server,
// dialled on first use, and its method, resolved once.
func (g *GRPC) route(ctx context.Context, rawURL string) (route, error) {
	g.rmu.RLock()
	rt, ok := g.routes[rawURL]
	gen := g.gen
	g.rmu.RUnlock()
	if ok {
		return rt, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return route{}, err
	}
	conn, err := g.client(u)
	if err != nil {
		return route{}, err
	}
	m, err := g.resolved(ctx, conn, u.Path)
	if err != nil {
		return route{}, err
	}
	rt = route{conn: conn, path: u.Path, m: m}
	g.rmu.Lock()
	if g.routes == nil {
		g.routes = map[string]route{}
	}
	if g.gen == gen && len(g.routes) < maxMemo { // no Close closed conn meanwhile
		g.routes[rawURL] = rt
	}
	g.rmu.Unlock()
	return rt, nil
}

// names remembers a conversion of header field names (a metadata key's
// canonical spelling, a field's lower-case one), done for every field
// of every call otherwise: a call's names are its API's few. Past
// maxMemo names each is converted on its own.
type names struct {
	m sync.Map // string -> string
	n atomic.Int64
}

var canonicalNames, lowerNames names

// of is conv(k), remembered.
func (c *names) of(k string, conv func(string) string) string {
	if v, ok := c.m.Load(k); ok {
		return v.(string)
	}
	v := conv(k)
	if c.n.Add(1) <= maxMemo {
		c.m.Store(k, v)
	}
	return v
}

// rawStatus is st in protojson's shape when a detail's type is one this
// binary does not know (google.rpc's own, AIP-193's ErrorInfo, BadRequest
// and the rest, it knows): each detail is kept as its type URL and bytes
// (base64), so a replay's comparison still sees it.
func rawStatus(st *status.Status) map[string]any {
	out := map[string]any{"code": int(st.Code()), "message": st.Message()}
	var details []map[string]string
	for _, d := range st.Proto().GetDetails() {
		details = append(details, map[string]string{"@type": d.GetTypeUrl(), "value": base64.StdEncoding.EncodeToString(d.GetValue())})
	}
	if details != nil {
		out["details"] = details
	}
	return out
}

// compactJSON removes the whitespace protojson varies on purpose, so that
// one message is always the same bytes.
func compactJSON(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// outgoing is the metadata of a request's header: names in lower case, as
// gRPC sends them; the fields HTTP/2 and gRPC reserve are left to gRPC.
func outgoing(h http.Header) metadata.MD {
	md := make(metadata.MD, len(h))
	for k, vs := range h {
		k = lowerNames.of(k, strings.ToLower)
		switch {
		case k == "content-type", k == "te", k == "user-agent", strings.HasPrefix(k, "grpc-"), strings.HasPrefix(k, ":"):
			continue
		}
		md[k] = append(md[k], vs...)
	}
	return md
}

// reachable waits until the connection to u's server is ready, or ctx
// ends: the preflight's "something answers" for a gRPC target.
func (g *GRPC) reachable(ctx context.Context, u *url.URL) error {
	conn, err := g.client(u)
	if err != nil {
		return err
	}
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		// A refused or failed connection is an answer: no need to wait
		// for gRPC's reconnection backoff to run out the deadline.
		if s == connectivity.TransientFailure || !conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("no gRPC server answers at %s (connection %s)", u.Host, s)
		}
	}
}

// grpcCurl is the grpcurl command reproducing a gRPC exchange.
func grpcCurl(x Exchange) string {
	u, err := url.Parse(x.Request.URL)
	if err != nil {
		return "# " + x.Request.URL
	}
	var b strings.Builder
	b.WriteString("grpcurl")
	if u.Scheme == "grpc" {
		b.WriteString(" -plaintext")
	}
	md := outgoing(x.Request.Header)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range md[k] {
			b.WriteString(" -H " + curlWord(k+": "+v))
		}
	}
	if len(x.Request.Body) > 0 {
		b.WriteString(" -d " + ShellQuote(string(x.Request.Body)))
	}
	b.WriteString(" " + u.Host + " " + strings.TrimPrefix(u.Path, "/"))
	return b.String()
}

// withKeyField is body with the target's key field set to key (AIP-155
// request_id: the key; AEP-155 idempotency_key: {key, first_sent} with
// firstSent, else the key's first_sent), or removed when key is absent.
// A body that is not a JSON object (a raw variant) is sent as it is.
func withKeyField(t *apispec.Target, body []byte, key string, present bool, firstSent time.Time) []byte {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			return body
		}
	}
	f := t.KeyField()
	delete(m, f)
	if present {
		var v any = key
		if t.Key.FirstSent {
			if firstSent.IsZero() {
				firstSent = t.FirstSent(key)
			}
			v = map[string]string{"key": key, "first_sent": firstSent.Format(time.RFC3339Nano)}
		}
		b, _ := json.Marshal(v) // strings only: never fails
		m[f] = b
	}
	b, _ := json.Marshal(m) // raw JSON values that parsed: never fails
	return b
}

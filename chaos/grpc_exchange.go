package chaos

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/idemcheck/idemcheck/internal/clock"
	"github.com/idemcheck/idemcheck/internal/grpccode"
)

// callExchange is one gRPC call as a fault's gRPC form sees it (Relay
// for a call): the request message's bytes and the operations a fault
// composes (forward, respond, answer, drop), each recorded in the
// attempt's history line.
type callExchange struct {
	ss     grpc.ServerStream
	p      *GRPCProxy
	method string
	md     metadata.MD
	body   []byte
	ev     Event
}

// callAnswer is what the upstream answered a call: its metadata, its
// status and, when OK, its message.
type callAnswer struct {
	header, trailer metadata.MD
	st              *grpcstatus.Status
	msg             []byte
}

// lostMessage is the status message of a call ended without its answer:
// the same whether the upstream ran it or not.
const lostMessage = "idemcheck: the connection to the upstream was lost (an injected fault); the call may or may not have run"

// Forward sends the call upstream once and waits for its whole answer,
// detached from the client: a client that goes away (its deadline, a
// cancel) does not cancel a call the upstream is committing. The
// upstream gets the proxy's timeout, not the client's deadline.
func (x *callExchange) Forward() *Upstream {
	u := x.forward()
	x.ev.Upstream = append(x.ev.Upstream, *u)
	return u
}

// forward is Forward without recording, for faults that run copies
// concurrently and record them in order afterwards.
func (x *callExchange) forward() *Upstream { return x.forwardCut(0) }

// forwardCut is forward, the call cancelled cut after it was sent unless
// it was answered first (cut 0: never): the upstream then sees its
// client give up (hangup).
func (x *callExchange) forwardCut(cut time.Duration) *Upstream {
	p := x.p
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.ss.Context()), p.opts.timeout)
	defer cancel()
	var hungUp atomic.Bool
	if cut > 0 {
		t := time.AfterFunc(cut, func() {
			hungUp.Store(true)
			cancel()
		})
		defer t.Stop()
	}
	var answered atomic.Bool
	ctx = metadata.NewOutgoingContext(context.WithValue(ctx, answeredKey{}, &answered), forwardMetadata(x.md))
	u := &Upstream{}
	if p.opts.history != nil {
		u.SentNS = max(time.Since(x.ev.Time).Nanoseconds(), 0)
	}
	a := &callAnswer{}
	err := p.conn().Invoke(ctx, x.method, &x.body, &a.msg, grpc.Header(&a.header), grpc.Trailer(&a.trailer))
	failed := err != nil && !answered.Load()
	p.count(true, failed)
	if failed {
		u.Error = err.Error()
		if hungUp.Load() {
			u.Error = fmt.Sprintf("cancelled the call %s after sending it, before any answer", cut)
		}
		return u
	}
	a.st = grpcstatus.Convert(err)
	u.call = a
	code := int(a.st.Code())
	u.Status, u.GRPCCode = grpccode.HTTPStatus(code), grpccode.Name(code)
	// Digest and id only matter to the history's reader.
	if p.opts.history == nil {
		return u
	}
	if err != nil {
		// The status is the answer: its code, message and details.
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(a.st.Proto())
		u.SHA256 = digest(b)
		return u
	}
	// The id is read from the message in protojson, as the client reads
	// it (id_pointer /name).
	m := p.decode(x.ss.Context(), x.method, a.msg, false)
	u.SHA256 = canonicalDigest(m, a.msg)
	if m != nil {
		if js, err := protojson.Marshal(m); err == nil {
			u.ID = p.opts.idOf(x.ev.Key, js)
		}
	}
	return u
}

// respond sends the upstream's answer to the client, its trailer labelled
// with the fault if one applies. An upstream that did not answer becomes
// UNAVAILABLE labelled "upstream" (the HTTP proxy's 502).
func (x *callExchange) respond(u *Upstream) error {
	if u.Error != "" {
		return x.answer(codes.Unavailable, "upstream", "upstream: "+u.Error)
	}
	a := u.call
	if x.ss.Context().Err() != nil {
		return x.gone() // its deadline passed while the upstream worked
	}
	x.ev.Status, x.ev.GRPCCode = u.Status, u.GRPCCode
	if len(a.header) > 0 {
		_ = x.ss.SetHeader(forwardMetadata(a.header))
	}
	trailer := forwardMetadata(a.trailer)
	if x.ev.Fault != "" {
		trailer.Set(faultMetadata, x.ev.Fault)
	}
	x.ss.SetTrailer(trailer)
	if a.st.Code() != codes.OK {
		x.ev.Client = ClientOK
		return a.st.Err()
	}
	if err := x.ss.SendMsg(&a.msg); err != nil {
		x.ev.Client = ClientUnknown
		return err
	}
	x.ev.Client = ClientOK
	return nil
}

// answer ends the call with a status the proxy made up, labelled (""
// labels it with the fault's kind): the client then knows the call did
// not run, unless the label is "upstream", which reports an upstream that
// did not answer.
func (x *callExchange) answer(c codes.Code, label, msg string) error {
	if label == "" {
		label = x.ev.Fault
	}
	x.ss.SetTrailer(metadata.Pairs(faultMetadata, label))
	x.ev.Client, x.ev.Status, x.ev.GRPCCode = ClientFail, grpccode.HTTPStatus(int(c)), grpccode.Name(int(c))
	if label == "upstream" {
		x.ev.Client = ClientUnknown // the upstream may have acted before failing
	}
	return grpcstatus.Error(c, msg)
}

// drop ends the call without the upstream's answer (the gRPC form of
// Abort). "unavailable" ends it at once with UNAVAILABLE, what a client
// sees when the connection under its call is lost (its own connection,
// which carries its other calls, stays up); "deadline" holds it until the
// client's deadline or cancel ends it (DEADLINE_EXCEEDED on the client),
// at most the proxy's timeout, then ends it as "unavailable" does. The
// client cannot tell whether the upstream acted.
func (x *callExchange) drop(mode string) error {
	x.ev.Client = ClientUnknown
	if mode == "deadline" && !x.sleep(x.p.opts.timeout) {
		return x.gone()
	}
	x.ss.SetTrailer(metadata.Pairs(faultMetadata, x.ev.Fault))
	return grpcstatus.Error(codes.Unavailable, lostMessage)
}

// gone ends a call whose client went away (its deadline, a cancel)
// before it had the answer.
func (x *callExchange) gone() error {
	x.ev.Client = ClientUnknown
	return grpcstatus.FromContextError(x.ss.Context().Err()).Err()
}

// sleep waits d unless the client goes away first (then false).
func (x *callExchange) sleep(d time.Duration) bool {
	return d <= 0 || clock.Until(x.ss.Context(), time.Now().Add(d)) == nil
}

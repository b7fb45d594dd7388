package apispec

import (
	"crypto/tls"
	"net/http"
	"strings"
	"time"
)

// ReadinessProbe is how a target the harness started (internal/managed)
// is known to answer, per carrier: any HTTP answer for an HTTP target; for
// a gRPC one, a call of a method no server has, over HTTP/2 (prior
// knowledge on grpc://, ALPN on grpcs://), which a gRPC server answers
// (UNIMPLEMENTED) and an HTTP/1 server or a closed port does not.
type ReadinessProbe struct {
	Speaks      string // for messages: HTTP, gRPC
	Client      *http.Client
	Method, URL string
	Header      http.Header
	// Answered reports an answer of the target's own protocol.
	Answered func(*http.Response) bool
}

// NewReadinessProbe is the probe of a target at base (tc: a grpcs://
// target's TLS).
func NewReadinessProbe(base string, tc *tls.Config) ReadinessProbe {
	if !IsGRPCURL(base) {
		return ReadinessProbe{Speaks: "HTTP", Client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
			Method: http.MethodGet, URL: base + "/", Header: http.Header{}, Answered: func(*http.Response) bool { return true }}
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc, Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	tr.Protocols.SetHTTP2(true)
	return ReadinessProbe{Speaks: "gRPC", Client: &http.Client{Timeout: 2 * time.Second, Transport: tr}, Method: http.MethodPost,
		URL: "http" + strings.TrimPrefix(base, "grpc") + "/idemcheck.ready.v1.Ready/Probe", Header: http.Header{"Content-Type": {"application/grpc"}},
		Answered: isGRPCAnswer}
}

// isGRPCAnswer reports an answer of a gRPC server: its content type, or
// a grpc-status (a trailers-only answer carries it in the header). An
// HTTP server speaking HTTP/2 (h2c) answers too, with neither.
func isGRPCAnswer(r *http.Response) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") ||
		r.Header.Get("Grpc-Status") != "" || r.Trailer.Get("Grpc-Status") != ""
}

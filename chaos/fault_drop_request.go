package chaos

// dropRequest closes the client connection without forwarding: the
// client sees the same failure as a dropped response, but nothing ran.
// Over gRPC the call ends as drop-response's does, never forwarded.
type dropRequest struct{ mode string }

// grpcDropModes are the ways a gRPC call ends without its answer
// (callExchange.drop), the default first. A reset of one call's stream
// is not among them: grpc-go's server cannot send one.
var grpcDropModes = []string{"unavailable", "deadline"}

func init() {
	register("drop-request", func(p params) (Fault, error) {
		m, err := p.mode("mode", "fin", "rst")
		return dropRequest{m}, err
	})
	registerGRPC("drop-request", func(p params) (grpcFault, error) {
		m, err := p.mode("mode", grpcDropModes...)
		return dropRequest{m}, err
	})
}

func (dropRequest) Kind() string { return "drop-request" }

func (f dropRequest) Serve(x *Relay) { x.Abort(f.mode) }

func (f dropRequest) serveGRPC(x *callExchange) error { return x.drop(f.mode) }

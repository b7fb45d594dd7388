package chaos

// dropResponse forwards the request, lets the upstream finish and reads
// its whole response, then closes the client connection: the request
// committed, the client cannot know. The core fault idemcheck exists for.
// Over gRPC the upstream runs the call to its end, then the call ends
// without its answer (callExchange.drop): mode=unavailable (the default)
// or mode=deadline.
type dropResponse struct{ mode string }

func init() {
	register("drop-response", func(p params) (Fault, error) {
		m, err := p.mode("mode", "fin", "rst")
		return dropResponse{m}, err
	})
	registerGRPC("drop-response", func(p params) (grpcFault, error) {
		m, err := p.mode("mode", grpcDropModes...)
		return dropResponse{m}, err
	})
}

func (dropResponse) Kind() string { return "drop-response" }

func (f dropResponse) Serve(x *Relay) {
	x.Forward(x.Body)
	x.Abort(f.mode)
}

func (f dropResponse) serveGRPC(x *callExchange) error {
	x.Forward()
	return x.drop(f.mode)
}

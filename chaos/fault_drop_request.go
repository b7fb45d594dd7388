package chaos

// dropRequest closes the client connection without forwarding: the
// client sees the same failure as a dropped response, but nothing ran.
type dropRequest struct{ mode string }

func init() {
	register("drop-request", func(p params) (Fault, error) {
		m, err := p.mode("mode", "fin", "rst")
		return dropRequest{m}, err
	})
}

func (dropRequest) Kind() string { return "drop-request" }

func (f dropRequest) Serve(x *Exchange) { x.Abort(f.mode) }

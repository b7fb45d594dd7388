package chaos

import "fmt"

// status answers an error status without forwarding, like Envoy's abort:
// a definite failure, nothing ran upstream.
type status struct{ code int }

func init() {
	register("status", func(p params) (Fault, error) {
		code, err := p.intValue("code", 503)
		if err == nil && (code < 400 || code > 599) {
			err = fmt.Errorf("token \"code=%d\": want a 4xx or 5xx status", code)
		}
		return status{code}, err
	})
}

func (status) Kind() string { return "status" }

func (f status) Serve(x *Exchange) {
	x.answer(f.code, "", "injected by idemcheck; the request was not forwarded")
}

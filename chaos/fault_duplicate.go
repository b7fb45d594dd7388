package chaos

import "sync"

// duplicate sends the request upstream twice, as a network or a proxy
// retry would: concurrently (both in flight at once) or sequentially. The
// client gets the first copy's answer; both copies are in the history.
type duplicate struct{ mode string }

func init() {
	register("duplicate", func(p params) (Fault, error) { return parseDuplicate(p) })
	registerGRPC("duplicate", func(p params) (grpcFault, error) { return parseDuplicate(p) })
}

func parseDuplicate(p params) (duplicate, error) {
	m, err := p.mode("mode", "concurrent", "sequential")
	return duplicate{m}, err
}

func (duplicate) Kind() string { return "duplicate" }

func (f duplicate) Serve(x *Relay) {
	if f.mode == "sequential" {
		first := x.Forward(x.Body)
		x.Forward(x.Body)
		x.Respond(first)
		return
	}
	var copies [2]*Upstream
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Go(func() {
			<-start // release both together to maximise the overlap
			copies[i] = x.forward(x.Body)
		})
	}
	close(start)
	wg.Wait()
	x.ev.Upstream = append(x.ev.Upstream, *copies[0], *copies[1])
	x.Respond(copies[0])
}

// serveGRPC sends the call upstream twice the same way (gRPC's hedging
// does so by design).
func (f duplicate) serveGRPC(x *callExchange) error {
	if f.mode == "sequential" {
		first := x.Forward()
		x.Forward()
		return x.respond(first)
	}
	var copies [2]*Upstream
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Go(func() {
			<-start
			copies[i] = x.forward()
		})
	}
	close(start)
	wg.Wait()
	x.ev.Upstream = append(x.ev.Upstream, *copies[0], *copies[1])
	return x.respond(copies[0])
}

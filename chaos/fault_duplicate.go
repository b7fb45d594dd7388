package chaos

import "sync"

// duplicate sends the request upstream twice, as a network or a proxy
// retry would: concurrently (both in flight at once) or sequentially. The
// client gets the first copy's answer; both copies are in the history.
type duplicate struct{ mode string }

func init() {
	register("duplicate", func(p params) (Fault, error) {
		m, err := p.mode("mode", "concurrent", "sequential")
		return duplicate{m}, err
	})
}

func (duplicate) Kind() string { return "duplicate" }

func (f duplicate) Serve(x *Exchange) {
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

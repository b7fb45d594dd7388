package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Intervals between redraws: often on a terminal, rarely in a log.
const (
	TTYInterval   = 250 * time.Millisecond
	PlainInterval = 5 * time.Second
)

// Line is a status line fed by a render function. A nil *Line shows
// nothing, so callers need no checks.
type Line struct {
	w      io.Writer
	tty    bool
	render func() string
	mu     sync.Mutex
	shown  bool // a status line is on the terminal
	stop   chan struct{}
	done   chan struct{}
}

// Enabled reports whether progress is shown: stdout is a terminal, or
// verbose (-v) asks for it anyway.
func Enabled(stdout io.Writer, verbose bool) bool { return verbose || IsTerminal(stdout) }

// Start shows render's text on w (stderr) every interval until Stop:
// redrawn in place when w is a terminal, as plain lines otherwise. It
// returns nil when progress is not enabled.
func Start(w, stdout io.Writer, verbose bool, render func() string) *Line {
	if !Enabled(stdout, verbose) {
		return nil
	}
	l := &Line{w: w, tty: IsTerminal(w), render: render, stop: make(chan struct{}), done: make(chan struct{})}
	every := PlainInterval
	if l.tty {
		every = TTYInterval
	}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
				l.draw()
			}
		}
	}()
	return l
}

func (l *Line) draw() {
	text := l.render()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tty {
		fmt.Fprint(l.w, "\r\033[K"+text)
		l.shown = true
		return
	}
	fmt.Fprintln(l.w, text)
}

// Println prints a line of its own (e.g. a verbose result) without
// tearing the status line; the next tick redraws it.
func (l *Line) Println(s string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
	fmt.Fprintln(l.w, s)
}

// Stop ends the updates and clears the status line from the terminal;
// in a log it prints the final state, so a short run shows one line too.
func (l *Line) Stop() {
	if l == nil {
		return
	}
	close(l.stop)
	<-l.done
	if !l.tty {
		l.draw()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
}

// IsTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ETA says how long until d from now, rounded to the second; past it,
// the run is finishing its last instances.
func ETA(d time.Duration) string {
	if d <= 0 {
		return "finishing"
	}
	return "ETA " + d.Round(time.Second).String()
}

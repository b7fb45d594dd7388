package events

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsSource reads a JetStream stream (the messages of one subject filter
// of it, or all) after the last sequence it had at Open. A catch-up reads
// through an ephemeral consumer of its own, created at the next sequence
// and deleted after: nothing of the reader's outlives a catch-up on the
// server, so a long run (chaos reads once, at the end) or a server restart
// between two catch-ups loses no position.
type natsSource struct {
	nc      *nats.Conn
	stream  jetstream.Stream
	subject string
	next    uint64 // the stream sequence of the next message to read
}

// natsBatch is how many messages one fetch returns at most.
const natsBatch = 256

// natsConsumerIdle is how long the server keeps a catch-up's consumer
// that was never deleted (the reader died mid catch-up).
const natsConsumerIdle = 30 * time.Second

func openNATS(ctx context.Context, c *eventspec.NATS) (*natsSource, error) {
	host := natsHost(c.URL)
	nc, err := nats.Connect(c.URL, nats.Name("idemcheck events"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("events.nats.url %s: %v", host, oneLine(err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("events.nats.url %s: %v", host, oneLine(err))
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	st, err := js.Stream(ctx, c.Stream)
	if err != nil {
		nc.Close()
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return nil, fmt.Errorf("events.nats.stream %q: no such stream on %s", c.Stream, host)
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled):
			return nil, fmt.Errorf("events.nats.url %s: JetStream is not enabled on the server", host)
		}
		return nil, fmt.Errorf("events.nats.stream %q: %v", c.Stream, oneLine(err))
	}
	info := st.CachedInfo()
	if subs := info.Config.Subjects; c.Subject != "" && len(subs) > 0 && !slices.ContainsFunc(subs, func(s string) bool { return subjectsOverlap(s, c.Subject) }) {
		nc.Close()
		return nil, fmt.Errorf("events.nats.subject %q: the stream holds none of it (its subjects: %s)", c.Subject, strings.Join(subs, ", "))
	}
	s := &natsSource{nc: nc, stream: st, subject: c.Subject, next: info.State.LastSeq + 1}
	// A consumer the server refuses (permissions, a bad filter) is found
	// now, not at the first count.
	cons, err := s.consumer(ctx)
	if err != nil {
		nc.Close()
		if c.Subject != "" {
			return nil, fmt.Errorf("events.nats.subject %q: %v", c.Subject, oneLine(err))
		}
		return nil, fmt.Errorf("events.nats.stream %q: %v", c.Stream, oneLine(err))
	}
	s.drop(ctx, cons)
	return s, nil
}

// consumer creates the catch-up consumer: ephemeral, in memory, no acks,
// delivering the subject's messages from s.next on.
func (s *natsSource) consumer(ctx context.Context) (jetstream.Consumer, error) {
	return s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       s.next,
		FilterSubject:     s.subject,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: natsConsumerIdle,
		MemoryStorage:     true,
	})
}

// drop deletes a catch-up consumer; one the server cannot delete now ends
// by itself after natsConsumerIdle.
func (s *natsSource) drop(ctx context.Context, cons jetstream.Consumer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.stream.DeleteConsumer(ctx, cons.CachedInfo().Name)
}

func (s *natsSource) catchUp(ctx context.Context, add func(message)) error {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return err
	}
	head := info.State.LastSeq
	if head < s.next {
		return nil
	}
	cons, err := s.consumer(ctx)
	if err != nil {
		return err
	}
	defer s.drop(ctx, cons)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A no-wait fetch returns what the consumer has pending when the
		// server takes it: fewer than asked means everything stored up to
		// then, head included, has been read.
		batch, err := cons.FetchNoWait(natsBatch)
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			n++
			s.next = md.Sequence.Stream + 1
			add(message{
				header:   natsHeader(m.Headers()),
				payload:  m.Data(),
				position: fmt.Sprintf("sequence %d", md.Sequence.Stream),
				time:     md.Timestamp,
			})
		}
		if err := batch.Error(); err != nil {
			return err
		}
		if n < natsBatch {
			// Messages of other subjects up to head are not ours to read.
			s.next = max(s.next, head+1)
			return nil
		}
	}
}

func (s *natsSource) close() error {
	s.nc.Close()
	return nil
}

// natsHeader looks a message header up case-insensitively (NATS keeps the
// case a publisher gave).
func natsHeader(h nats.Header) func(string) (string, bool) {
	return func(want string) (string, bool) {
		for k, vs := range h {
			if strings.EqualFold(k, want) && len(vs) > 0 {
				return vs[0], true
			}
		}
		return "", false
	}
}

// subjectsOverlap reports whether some subject matches both patterns
// (tokens split on '.', '*' one token, '>' the rest).
func subjectsOverlap(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(at) && i < len(bt); i++ {
		switch {
		case at[i] == ">" || bt[i] == ">":
			return true
		case at[i] != "*" && bt[i] != "*" && at[i] != bt[i]:
			return false
		}
	}
	return len(at) == len(bt)
}

// natsHost is the host part of a NATS URL: never its password.
func natsHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "(the url)"
}

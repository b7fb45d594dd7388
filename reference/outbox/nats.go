package outbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemcheck/idemcheck/reference"
)

type natsPublisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string
	subject string
}

// openNATS connects to nats://[USER:PASS@]HOST:PORT/STREAM[?subject=S]
// and makes sure the JetStream stream STREAM holds subject S (default: the
// stream's name), creating the stream when there is none: events are
// published to S and acknowledged by that stream.
func openNATS(ctx context.Context, u *url.URL) (*natsPublisher, error) {
	stream := strings.TrimPrefix(u.Path, "/")
	subject := u.Query().Get("subject")
	if subject == "" {
		subject = stream
	}
	if u.Host == "" || stream == "" || strings.ContainsAny(stream, "/.*> ") || strings.ContainsAny(subject, " *>") {
		return nil, errors.New("want nats://HOST:PORT/STREAM?subject=SUBJECT (a subject without wildcards)")
	}
	server := url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host}
	nc, err := nats.Connect(server.String(), nats.Name("idemcheck serve outbox"), nats.Timeout(5*time.Second))
	if err != nil {
		return nil, fmt.Errorf("nats %s: %v", u.Host, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats %s: %v", u.Host, err)
	}
	p := &natsPublisher{nc: nc, js: js, stream: stream, subject: subject}
	if err := p.ensureStream(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats %s: %v", u.Host, err)
	}
	return p, nil
}

// ensureStream checks that the stream holding the subject is ours, or
// creates ours for it when no stream holds it.
func (p *natsPublisher) ensureStream(ctx context.Context) error {
	name, err := p.js.StreamNameBySubject(ctx, p.subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		_, err = p.js.CreateStream(ctx, jetstream.StreamConfig{Name: p.stream, Subjects: []string{p.subject}, Storage: jetstream.FileStorage})
		if err != nil {
			return fmt.Errorf("creating stream %s for subject %s: %v", p.stream, p.subject, err)
		}
		return nil
	case err != nil:
		return err
	case name != p.stream:
		return fmt.Errorf("subject %s belongs to stream %s, not %s", p.subject, name, p.stream)
	}
	return nil
}

// Publish sends e to the subject with the headers and waits for the
// stream's acknowledgement.
func (p *natsPublisher) Publish(ctx context.Context, e reference.Event) error {
	m := nats.NewMsg(p.subject)
	m.Data = e.Payload
	m.Header.Set(HeaderKey, e.Key)
	m.Header.Set(HeaderType, e.Type)
	if e.ID != "" {
		m.Header.Set(HeaderID, e.ID)
	}
	_, err := p.js.PublishMsg(ctx, m, jetstream.WithExpectStream(p.stream))
	return err
}

func (p *natsPublisher) Close() error {
	p.nc.Close()
	return nil
}

package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemcheck/idemcheck/reference"
)

// Header names every published event carries.
const (
	HeaderKey  = "idempotency-key"
	HeaderID   = "event-id"
	HeaderType = "event-type"
)

// Publisher is a reference.Publisher holding a broker connection.
type Publisher interface {
	reference.Publisher
	Close() error
}

// openTimeout bounds connecting to the broker at Open.
const openTimeout = 10 * time.Second

// Open connects to the broker rawURL names and checks it answers; errors
// are one line and never repeat a password.
func Open(ctx context.Context, rawURL string) (Publisher, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	switch u.Scheme {
	case "kafka":
		return openKafka(ctx, u)
	case "redis", "rediss":
		return openRedis(ctx, u, rawURL)
	case "nats":
		return openNATS(ctx, u)
	}
	return nil, fmt.Errorf("scheme %q: want kafka://, redis:// or nats://", u.Scheme)
}

type kafkaPublisher struct{ cl *kgo.Client }

func openKafka(ctx context.Context, u *url.URL) (*kafkaPublisher, error) {
	topic := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || topic == "" || strings.Contains(topic, "/") {
		return nil, errors.New("want kafka://HOST:PORT/TOPIC")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(u.Host, ",")...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return nil, err
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafka %s: %v", u.Host, err)
	}
	return &kafkaPublisher{cl: cl}, nil
}

// Publish produces e with its key as the record key (one key's events stay
// in order on one partition) and waits for the broker's acknowledgement.
func (p *kafkaPublisher) Publish(ctx context.Context, e reference.Event) error {
	rec := &kgo.Record{Key: []byte(e.Key), Value: e.Payload, Headers: []kgo.RecordHeader{
		{Key: HeaderKey, Value: []byte(e.Key)}, {Key: HeaderType, Value: []byte(e.Type)}}}
	if e.ID != "" {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: HeaderID, Value: []byte(e.ID)})
	}
	return p.cl.ProduceSync(ctx, rec).FirstErr()
}

func (p *kafkaPublisher) Close() error {
	p.cl.Close()
	return nil
}

type redisPublisher struct {
	rdb    *redis.Client
	stream string
}

func openRedis(ctx context.Context, u *url.URL, rawURL string) (*redisPublisher, error) {
	stream := u.Query().Get("stream")
	if stream == "" {
		return nil, errors.New("want redis://HOST:PORT/DB?stream=NAME")
	}
	q := u.Query()
	q.Del("stream")
	u.RawQuery = q.Encode()
	ro, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("redis: %v", err)
	}
	rdb := redis.NewClient(ro)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis %s: %v", ro.Addr, err)
	}
	return &redisPublisher{rdb: rdb, stream: stream}, nil
}

// Publish appends e to the stream: the payload in field "payload", the
// headers as fields of their own.
func (p *redisPublisher) Publish(ctx context.Context, e reference.Event) error {
	values := []any{"payload", string(e.Payload), HeaderKey, e.Key, HeaderType, e.Type}
	if e.ID != "" {
		values = append(values, HeaderID, e.ID)
	}
	return p.rdb.XAdd(ctx, &redis.XAddArgs{Stream: p.stream, Values: values}).Err()
}

func (p *redisPublisher) Close() error {
	if err := p.rdb.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return err
	}
	return nil
}

// Relay timing: how often the outbox is polled, how many events one poll
// takes, and how long a claim keeps other relays off them.
const (
	relayPoll  = 50 * time.Millisecond
	relayBatch = 100
	relayLease = 10 * time.Second
)

// Relay publishes the events of an outbox and marks them sent. A crash
// between publishing and marking publishes the event again, with its id,
// after the claim's lease: at-least-once delivery that consumers dedupe.
type Relay struct {
	store     reference.EventStore
	pub       reference.Publisher
	republish bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewRelay starts relaying store's outbox to pub until Close. With the
// relay-republish defect it first publishes the latest sent events again,
// stripped of their ids.
func NewRelay(store reference.EventStore, pub reference.Publisher, defects ...reference.Defect) *Relay {
	r := &Relay{store: store, pub: pub, stop: make(chan struct{}), done: make(chan struct{})}
	for _, d := range defects {
		r.republish = r.republish || d == reference.RelayRepublish
	}
	go r.run()
	return r
}

// Close stops the relay and waits for it.
func (r *Relay) Close() {
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

func (r *Relay) run() {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if r.republish {
		r.republishSent(ctx)
	}
	t := time.NewTicker(relayPoll)
	defer t.Stop()
	for {
		for n := relayBatch; n == relayBatch; { // a full batch: more are waiting
			n = r.relay(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// publishTimeout bounds one publish: a broker that does not acknowledge
// within it leaves the event for a later try.
const publishTimeout = 10 * time.Second

func (r *Relay) publish(ctx context.Context, e reference.Event) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	return r.pub.Publish(ctx, e)
}

// relay publishes one batch and says how many events it claimed.
func (r *Relay) relay(ctx context.Context) int {
	evs, err := r.store.ClaimEvents(ctx, relayBatch, relayLease)
	if err != nil {
		return 0 // the store is down: the next poll tries again
	}
	sent := make([]string, 0, len(evs))
	for _, e := range evs {
		if r.publish(ctx, e) != nil {
			break // the broker is down: these stay claimed until the lease ends
		}
		sent = append(sent, e.ID)
	}
	if len(sent) > 0 {
		_ = r.store.MarkSent(ctx, sent)
	}
	return len(evs)
}

// republishSent is the relay-republish defect: a relay that lost track of
// what it sent rebuilds the latest events from the outbox without their
// ids and publishes them again.
func (r *Relay) republishSent(ctx context.Context) {
	evs, err := r.store.SentEvents(ctx, 1000)
	if err != nil {
		return
	}
	for _, e := range evs {
		e.ID = ""
		var m map[string]any
		if json.Unmarshal(e.Payload, &m) == nil {
			delete(m, "id")
			if b, err := json.Marshal(m); err == nil {
				e.Payload = b
			}
		}
		if r.publish(ctx, e) != nil {
			return
		}
	}
}

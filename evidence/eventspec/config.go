package eventspec

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/internal/jsonx"
)

// Config is the events: section of a run config. Exactly one broker is set.
//
//	events:
//	  kafka: {brokers: ["127.0.0.1:9092"], topic: orders.events}
//	  # nats: {url: nats://127.0.0.1:4222, stream: ORDERS, subject: orders.>}
//	  # redis: {url: redis://127.0.0.1:6379/0, stream: orders-events}
//	  key: {pointer: /data/reference}   # or {header: idempotency-key}
//	  event_id: /id                     # optional
//	  settle: 2s
type Config struct {
	Kafka *Kafka `yaml:"kafka,omitempty" json:"kafka,omitempty"`
	NATS  *NATS  `yaml:"nats,omitempty" json:"nats,omitempty"`
	Redis *Redis `yaml:"redis,omitempty" json:"redis,omitempty"`
	// Key says where an event names the key it belongs to.
	Key Key `yaml:"key" json:"key"`
	// EventID is an RFC 6901 pointer to the event's id in the payload
	// (optional). Events of one key sharing an id are one execution
	// delivered more than once (at-least-once delivery), not two.
	EventID string `yaml:"event_id,omitempty" json:"event_id,omitempty"`
	// ResourceID is an RFC 6901 pointer to the id of the resource an event
	// announces (optional): outbox/announces-created-id holds it against
	// the created id the answer carries.
	ResourceID string `yaml:"resource_id,omitempty" json:"resource_id,omitempty"`
	// Declines says whether the API announces a declined request (the
	// business_error variant's answer) with an event: "silent" (the
	// default: no event, it changed nothing) or "announced" (one event, as
	// for any stored outcome).
	Declines string `yaml:"declines,omitempty" json:"declines,omitempty"`
	// Settle is how long a key's count must stay unchanged before it is
	// taken as final: at least the longest time the API's relay takes to
	// publish an event after answering (default DefaultSettle).
	Settle time.Duration `yaml:"settle,omitempty" json:"settle,omitempty"`
}

// Kafka names a topic and the brokers to bootstrap from.
type Kafka struct {
	Brokers []string `yaml:"brokers" json:"brokers"`
	Topic   string   `yaml:"topic" json:"topic"`
}

// NATS names a JetStream stream and the subjects of it to read.
type NATS struct {
	URL    string `yaml:"url" json:"-"` // may hold a password: never in JSON
	Stream string `yaml:"stream" json:"stream"`
	// Subject filters the stream (wildcards allowed); empty: all of it.
	Subject string `yaml:"subject,omitempty" json:"subject,omitempty"`
}

// Redis names a Redis stream. An entry's fields are its headers; its
// payload is the JSON in field PayloadField.
type Redis struct {
	URL    string `yaml:"url" json:"-"` // may hold a password: never in JSON
	Stream string `yaml:"stream" json:"stream"`
	// PayloadField names the entry field holding the JSON payload that
	// pointers read (default "payload").
	PayloadField string `yaml:"payload_field,omitempty" json:"payload_field,omitempty"`
}

// Key attributes an event to an idempotency key: exactly one is set.
type Key struct {
	// Pointer is an RFC 6901 pointer to a string in the JSON payload.
	Pointer string `yaml:"pointer,omitempty" json:"pointer,omitempty"`
	// Header names a message header (case-insensitive; a Redis entry's
	// field).
	Header string `yaml:"header,omitempty" json:"header,omitempty"`
}

// The values of Config.Declines.
const (
	DeclinesSilent    = "silent"
	DeclinesAnnounced = "announced"
)

// DefaultSettle is the settle time when none is configured: the engine's
// lag rule re-reads a count for as long.
const DefaultSettle = 2 * time.Second

// SettleFactor bounds Settle: a count still changing after this many
// settle times is reported unsettled.
const SettleFactor = 10

// DefaultPayloadField is the Redis entry field holding the payload.
const DefaultPayloadField = "payload"

// Validate checks c, filling in defaults; an error is one line naming the
// field (events.kafka.topic: ...).
func (c *Config) Validate() error {
	n := 0
	for _, set := range []bool{c.Kafka != nil, c.NATS != nil, c.Redis != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("events: set one of kafka, nats or redis")
	case n > 1:
		return errors.New("events: set only one of kafka, nats or redis")
	}
	if err := c.validateBroker(); err != nil {
		return err
	}
	switch {
	case c.Key.Pointer == "" && c.Key.Header == "":
		return errors.New("events.key: set pointer (into the JSON payload) or header")
	case c.Key.Pointer != "" && c.Key.Header != "":
		return errors.New("events.key: set pointer or header, not both")
	case c.Key.Pointer != "":
		if err := checkPointer(c.Key.Pointer); err != nil {
			return fmt.Errorf("events.key.pointer %q: %v", c.Key.Pointer, err)
		}
	case strings.TrimSpace(c.Key.Header) != c.Key.Header:
		return fmt.Errorf("events.key.header %q: has surrounding spaces", c.Key.Header)
	}
	if c.EventID != "" {
		if err := checkPointer(c.EventID); err != nil {
			return fmt.Errorf("events.event_id %q: %v", c.EventID, err)
		}
	}
	if c.ResourceID != "" {
		if err := checkPointer(c.ResourceID); err != nil {
			return fmt.Errorf("events.resource_id %q: %v", c.ResourceID, err)
		}
	}
	switch c.Declines {
	case "":
		c.Declines = DeclinesSilent
	case DeclinesSilent, DeclinesAnnounced:
	default:
		return fmt.Errorf("events.declines %q: want %s or %s", c.Declines, DeclinesSilent, DeclinesAnnounced)
	}
	switch {
	case c.Settle < 0:
		return fmt.Errorf("events.settle %s: must be positive", c.Settle)
	case c.Settle == 0:
		c.Settle = DefaultSettle
	case c.Settle > 10*time.Minute:
		return fmt.Errorf("events.settle %s: at most 10m", c.Settle)
	}
	return nil
}

func (c *Config) validateBroker() error {
	switch {
	case c.Kafka != nil:
		if len(c.Kafka.Brokers) == 0 {
			return errors.New("events.kafka.brokers: required (host:port, ...)")
		}
		for i, b := range c.Kafka.Brokers {
			if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
				return fmt.Errorf("events.kafka.brokers[%d] %q: want host:port", i, b)
			}
		}
		if c.Kafka.Topic == "" {
			return errors.New("events.kafka.topic: required")
		}
	case c.Redis != nil:
		if err := checkURL(c.Redis.URL, "redis", "rediss"); err != nil {
			return fmt.Errorf("events.redis.url: %v", err)
		}
		if c.Redis.Stream == "" {
			return errors.New("events.redis.stream: required")
		}
		if c.Redis.PayloadField == "" {
			c.Redis.PayloadField = DefaultPayloadField
		}
	case c.NATS != nil:
		if err := checkURL(c.NATS.URL, "nats", "tls"); err != nil {
			return fmt.Errorf("events.nats.url: %v", err)
		}
		if c.NATS.Stream == "" {
			return errors.New("events.nats.stream: required")
		}
	}
	return nil
}

// checkPointer accepts a non-empty RFC 6901 pointer.
func checkPointer(p string) error {
	if p == "" || p[0] != '/' {
		return errors.New("must start with '/' (an RFC 6901 JSON pointer)")
	}
	_, err := jsonx.ParsePointer(p)
	return err
}

// checkURL accepts an absolute URL of one of schemes with a host. The
// error never repeats the URL: it may hold a password.
func checkURL(raw string, schemes ...string) error {
	if raw == "" {
		return errors.New("required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return fmt.Errorf("scheme %q: want %s://", u.Scheme, strings.Join(schemes, ":// or "))
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// String names the source in notes and errors: no secret in it.
func (c *Config) String() string {
	var where string
	switch {
	case c.Kafka != nil:
		where = "kafka topic " + c.Kafka.Topic
	case c.Redis != nil:
		where = "redis stream " + c.Redis.Stream
	case c.NATS != nil:
		where = "nats stream " + c.NATS.Stream
		if c.NATS.Subject != "" {
			where += " subject " + c.NATS.Subject
		}
	}
	if c.Key.Header != "" {
		return where + ", key in header " + c.Key.Header
	}
	return where + ", key at " + c.Key.Pointer
}

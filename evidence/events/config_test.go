package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/evidence/events"
)

// Each bad config is one line naming its field; a good one gets defaults.
func TestValidate(t *testing.T) {
	kafka := &events.Kafka{Brokers: []string{"127.0.0.1:9092"}, Topic: "t"}
	hk := events.Key{Header: "idempotency-key"}
	for _, tc := range []struct {
		cfg  events.Config
		want string
	}{
		{events.Config{Key: hk}, "events: set one of kafka, nats or redis"},
		{events.Config{Kafka: kafka, Redis: &events.Redis{URL: "redis://h:1", Stream: "s"}, Key: hk}, "events: set only one"},
		{events.Config{Kafka: &events.Kafka{Topic: "t"}, Key: hk}, "events.kafka.brokers: required"},
		{events.Config{Kafka: &events.Kafka{Brokers: []string{"localhost"}, Topic: "t"}, Key: hk}, `events.kafka.brokers[0] "localhost": want host:port`},
		{events.Config{Kafka: &events.Kafka{Brokers: []string{"h:1"}}, Key: hk}, "events.kafka.topic: required"},
		{events.Config{Redis: &events.Redis{URL: "http://h:1", Stream: "s"}, Key: hk}, `events.redis.url: scheme "http"`},
		{events.Config{Redis: &events.Redis{URL: "redis://h:1"}, Key: hk}, "events.redis.stream: required"},
		{events.Config{NATS: &events.NATS{URL: "nats://h:4222"}, Key: hk}, "events.nats.stream: required"},
		{events.Config{Kafka: kafka}, "events.key: set pointer"},
		{events.Config{Kafka: kafka, Key: events.Key{Header: "h", Pointer: "/p"}}, "events.key: set pointer or header, not both"},
		{events.Config{Kafka: kafka, Key: events.Key{Pointer: "data"}}, `events.key.pointer "data": must start with '/'`},
		{events.Config{Kafka: kafka, Key: events.Key{Pointer: "/a~2"}}, `events.key.pointer "/a~2": '~' must be followed`},
		{events.Config{Kafka: kafka, Key: hk, EventID: "id"}, `events.event_id "id"`},
		{events.Config{Kafka: kafka, Key: hk, Settle: -time.Second}, "events.settle -1s: must be positive"},
		{events.Config{Kafka: kafka, Key: hk, Settle: time.Hour}, "events.settle 1h0m0s: at most 10m"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate = %v, want one line starting %q", err, tc.want)
		}
	}
	c := events.Config{Redis: &events.Redis{URL: "redis://:secret@h:1/0", Stream: "s"}, Key: hk}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Settle != events.DefaultSettle || c.Redis.PayloadField != "payload" {
		t.Fatalf("defaults: settle %s, payload field %q", c.Settle, c.Redis.PayloadField)
	}
	if strings.Contains(c.String(), "secret") {
		t.Fatalf("String() shows the URL's password: %s", c.String())
	}
}

package eventspec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/evidence/eventspec"
)

// Each bad config is one line naming its field; a good one gets defaults.
func TestValidate(t *testing.T) {
	kafka := &eventspec.Kafka{Brokers: []string{"127.0.0.1:9092"}, Topic: "t"}
	hk := eventspec.Key{Header: "idempotency-key"}
	for _, tc := range []struct {
		cfg  eventspec.Config
		want string
	}{
		{eventspec.Config{Key: hk}, "events: set one of kafka, nats or redis"},
		{eventspec.Config{Kafka: kafka, Redis: &eventspec.Redis{URL: "redis://h:1", Stream: "s"}, Key: hk}, "events: set only one"},
		{eventspec.Config{Kafka: &eventspec.Kafka{Topic: "t"}, Key: hk}, "events.kafka.brokers: required"},
		{eventspec.Config{Kafka: &eventspec.Kafka{Brokers: []string{"localhost"}, Topic: "t"}, Key: hk}, `events.kafka.brokers[0] "localhost": want host:port`},
		{eventspec.Config{Kafka: &eventspec.Kafka{Brokers: []string{"h:1"}}, Key: hk}, "events.kafka.topic: required"},
		{eventspec.Config{Redis: &eventspec.Redis{URL: "http://h:1", Stream: "s"}, Key: hk}, `events.redis.url: scheme "http"`},
		{eventspec.Config{Redis: &eventspec.Redis{URL: "redis://h:1"}, Key: hk}, "events.redis.stream: required"},
		{eventspec.Config{NATS: &eventspec.NATS{URL: "nats://h:4222"}, Key: hk}, "events.nats.stream: required"},
		{eventspec.Config{Kafka: kafka}, "events.key: set pointer"},
		{eventspec.Config{Kafka: kafka, Key: eventspec.Key{Header: "h", Pointer: "/p"}}, "events.key: set pointer or header, not both"},
		{eventspec.Config{Kafka: kafka, Key: eventspec.Key{Pointer: "data"}}, `events.key.pointer "data": must start with '/'`},
		{eventspec.Config{Kafka: kafka, Key: eventspec.Key{Pointer: "/a~2"}}, `events.key.pointer "/a~2": '~' must be followed`},
		{eventspec.Config{Kafka: kafka, Key: hk, EventID: "id"}, `events.event_id "id"`},
		{eventspec.Config{Kafka: kafka, Key: hk, Settle: -time.Second}, "events.settle -1s: must be positive"},
		{eventspec.Config{Kafka: kafka, Key: hk, Settle: time.Hour}, "events.settle 1h0m0s: at most 10m"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate = %v, want one line starting %q", err, tc.want)
		}
	}
	c := eventspec.Config{Redis: &eventspec.Redis{URL: "redis://:secret@h:1/0", Stream: "s"}, Key: hk}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Settle != eventspec.DefaultSettle || c.Redis.PayloadField != "payload" {
		t.Fatalf("defaults: settle %s, payload field %q", c.Settle, c.Redis.PayloadField)
	}
	if strings.Contains(c.String(), "secret") {
		t.Fatalf("String() shows the URL's password: %s", c.String())
	}
}

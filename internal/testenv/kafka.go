package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Ways of providing Kafka besides HowEnv.
const HowKfake = "kfake"

var kafkaTopics atomic.Int64

// RequireKafka returns the seed brokers of a Kafka cluster for t:
// IDEMCHECK_KAFKA_BROKERS (comma-separated host:port, a CI service
// container), else a one-broker in-process kfake cluster of its own, which
// speaks the real Kafka protocol on a loopback port and is closed when t
// ends. Tests keep apart on a shared cluster with KafkaTopic.
func RequireKafka(t testing.TB) (brokers []string, how string) {
	t.Helper()
	if v := os.Getenv("IDEMCHECK_KAFKA_BROKERS"); v != "" {
		return strings.Split(v, ","), HowEnv
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		unavailable(t, "kafka", fmt.Errorf("kfake: %w", err))
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs(), HowKfake
}

// KafkaTopic creates a topic with partitions that no other test of this
// run uses, and returns its name.
func KafkaTopic(t testing.TB, brokers []string, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("idemcheck-t%d-%d", os.Getpid(), kafkaTopics.Add(1))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Replication factor -1: the broker's default (1 on kfake and on a
	// one-node service container).
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, name); err != nil {
		t.Fatalf("create kafka topic %s: %v", name, err)
	}
	return name
}

// KafkaRecords reads every record of topic, from the start of each
// partition to its end offset now.
func KafkaRecords(t testing.TB, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("kafka end offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatalf("kafka client: %v", err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("kafka fetch of %s: %v", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < want[r.Partition] {
				out = append(out, r)
			}
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

// KafkaSettled waits until topic holds at least atLeast records (10 s at
// most), then 300 ms more, time for a late one to show (an outbox relay
// polls every 50 ms), and returns them all.
func KafkaSettled(t testing.TB, brokers []string, topic string, atLeast int) []*kgo.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(KafkaRecords(t, brokers, topic)) < atLeast && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	return KafkaRecords(t, brokers, topic)
}

// KafkaHeader is the value of r's header name ("" when absent).
func KafkaHeader(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}

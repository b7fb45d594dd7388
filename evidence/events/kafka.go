package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck/evidence/eventspec"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// openTimeout bounds reaching a broker and reading the stream's position
// at Open.
const openTimeout = 15 * time.Second

// kafkaSource reads one topic's partitions from their end offsets at Open.
// It reads committed records only, and keeps control records (never
// attributed) so that the offsets a transaction's markers and aborted
// records take still move the position up to the head. Partitions added
// to the topic after Open are not read.
type kafkaSource struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	next  map[int32]int64 // per partition, the offset of the next record to read
}

func openKafka(ctx context.Context, c *eventspec.Kafka) (*kafkaSource, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("events.kafka.brokers: %v", err)
	}
	k := &kafkaSource{cl: cl, adm: kadm.NewClient(cl), topic: c.Topic, next: map[int32]int64{}}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	ends, err := k.ends(ctx)
	if err != nil {
		cl.Close()
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("events.kafka.topic %q: no such topic on %s", c.Topic, strings.Join(c.Brokers, ","))
		}
		return nil, fmt.Errorf("events.kafka.brokers %s: %v", strings.Join(c.Brokers, ","), oneLine(err))
	}
	parts := map[int32]kgo.Offset{}
	for p, off := range ends {
		k.next[p] = off
		parts[p] = kgo.NewOffset().At(off)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: parts})
	return k, nil
}

// ends lists the last stable offset (the end of what is committed) of
// every partition.
func (k *kafkaSource) ends(ctx context.Context) (map[int32]int64, error) {
	listed, err := k.adm.ListCommittedOffsets(ctx, k.topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	if len(out) == 0 {
		return nil, kerr.UnknownTopicOrPartition
	}
	return out, nil
}

func (k *kafkaSource) catchUp(ctx context.Context, add func(message)) error {
	ends, err := k.ends(ctx)
	if err != nil {
		return err
	}
	behind := func() bool {
		for p, next := range k.next {
			if next < ends[p] {
				return true
			}
		}
		return false
	}
	for behind() {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := k.cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return fmt.Errorf("partition %d: %w", fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(rec *kgo.Record) {
			k.next[rec.Partition] = rec.Offset + 1
			if rec.Attrs.IsControl() {
				return
			}
			add(message{
				header: headerFold(rec.Headers,
					func(h kgo.RecordHeader) string { return h.Key },
					func(h kgo.RecordHeader) string { return string(h.Value) }),
				payload:  rec.Value,
				position: fmt.Sprintf("partition %d offset %d", rec.Partition, rec.Offset),
				time:     rec.Timestamp,
			})
		})
	}
	return nil
}

func (k *kafkaSource) close() error {
	k.cl.Close()
	return nil
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

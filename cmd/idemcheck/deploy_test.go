package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck/load"
)

// TestDeployManifestShards keeps deploy/k8s/load-shards.yaml truthful: the
// Indexed Job's every index, substituted for $(JOB_COMPLETION_INDEX) as
// Kubernetes does, makes a valid --shard whose N is the Job's completions,
// and the merge Job reads one results file per shard.
func TestDeployManifestShards(t *testing.T) {
	f, err := os.Open("../../deploy/k8s/load-shards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type job struct {
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int    `yaml:"completions"`
			Template       struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	var shards, report job
	dec := yaml.NewDecoder(f)
	if err := dec.Decode(&shards); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&report); err != nil {
		t.Fatal(err)
	}
	n := shards.Spec.Completions
	if shards.Spec.CompletionMode != "Indexed" || n < 2 {
		t.Fatalf("completionMode %q completions %d: want an Indexed Job of several shards", shards.Spec.CompletionMode, n)
	}
	var shardArg string
	for _, a := range shards.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--shard="); ok {
			shardArg = v
		}
	}
	for i := range n {
		s, err := load.ParseShard(strings.ReplaceAll(shardArg, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
		if err != nil || s.N != n {
			t.Errorf("index %d: --shard=%s gives %v %v, want shard %d of %d", i, shardArg, s, err, i, n)
		}
	}
	gobs := 0
	for _, a := range report.Spec.Template.Spec.Containers[0].Args {
		if strings.HasSuffix(a, ".gob") {
			gobs++
		}
	}
	if gobs != n {
		t.Errorf("the merge Job reads %d results files, want %d", gobs, n)
	}
}

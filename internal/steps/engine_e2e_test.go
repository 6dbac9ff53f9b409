package steps_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// TestEndToEndMatchesPlugin dispatches the recorded scenarios with the Go
// builder, runs every job with the engine (in claim order, delays not
// awaited, as the recording forced them), and requires every row of every
// table to equal the plugin's last snapshot.
func TestEndToEndMatchesPlugin(t *testing.T) {
	t.Parallel()
	decode := func(s string) *phpjson.Object { return decodeObject(t, s) }
	cases := []struct {
		file  string
		build func() (*workflow.Builder, *phpjson.Object)
	}{
		{"wf_sequence.json", func() (*workflow.Builder, *phpjson.Object) {
			return workflow.New("seq").Then("IncStep").Then("IncStep", workflow.Named("second")).Then("IncStep"),
				decode(`{"n":0,"title":"\u00dcn\u00ef\/code"}`)
		}},
		{"wf_parallel.json", func() (*workflow.Builder, *phpjson.Object) {
			return workflow.New("par").Parallel("BranchA", "BranchB").Then("IncStep"), decode(`{"n":10}`)
		}},
		{"wf_delay_repeat.json", func() (*workflow.Builder, *phpjson.Object) {
			return workflow.New("loop").Then("DraftStep", workflow.Named("draft")).Delay(30*1e9).
				RepeatUntil("draft", workflow.StateKey("approved"), workflow.Expected(true), workflow.MaxIterations(3)).Then("IncStep"), decode(`{"n":0}`)
		}},
		{"wf_for_each_quorum_reducer.json", func() (*workflow.Builder, *phpjson.Object) {
			return workflow.New("fe").Then("PlanItems").
				ForEach("items", "ItemStep", workflow.ResultKey("results"), workflow.ForEachQuorum, workflow.Quorum(2), workflow.Reducer("SumReducer")).
				Then("IncStep"), phpjson.NewObject()
		}},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".json"), func(t *testing.T) {
			t.Parallel()
			snaps := loadReplay(t, tc.file)
			env := newEngineEnv(t)
			b, initial := tc.build()
			env.Dispatch(b.WithHandlerMetadata(env.Engine.Handlers()), initial)
			env.compare("dispatch", snaps[0])
			env.Drain(20)
			last := snaps[len(snaps)-1].clone()
			for _, fix := range replayCorrections[tc.file] {
				fix(last.Rows)
			}
			env.compare("end", last)
			require.Empty(t, env.PendingJobs())
		})
	}
}

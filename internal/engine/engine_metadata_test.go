package engine

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/queuety-go/queuety/workflow"
)

type peekRecorder struct {
	workflow.HandlerMetadataMap
	peeked []string
}

func (p *peekRecorder) PeekClassMetadata(class string) (workflow.HandlerMetadata, bool) {
	p.peeked = append(p.peeked, class)
	return p.HandlerMetadataMap[class], true
}

// While a step runs, the classes of the next one are read ahead (PHP
// classes only: not placeholders, not Go step handlers); the engine's
// metadata is a Go step handler's registration, else the class source's.
func TestEngineMetadataSourceAndPrefetch(t *testing.T) {
	t.Parallel()
	h := workflow.NewHandlers()
	require.NoError(t, h.Step("GoStep", nil, workflow.HandlerMetadata{MaxAttempts: 2}))
	src := &peekRecorder{HandlerMetadataMap: workflow.HandlerMetadataMap{"PhpStep": {Queue: "gpu"}, "GoStep": {Queue: "ignored"}}}
	e := &Engine{handlers: h}
	require.Equal(t, workflow.HandlerMetadata{}, e.metadata().HandlerMetadata("PhpStep"), "no class source: Go registrations only")
	e.classMeta = src
	require.Equal(t, "gpu", e.metadata().HandlerMetadata("PhpStep").Queue)
	require.Equal(t, workflow.HandlerMetadata{MaxAttempts: 2}, e.metadata().HandlerMetadata("GoStep"))

	state, err := workflow.ParseState([]byte(`{"_steps":[{"type":"single","class":"First"},{"type":"parallel","handlers":["PhpStep","GoStep"," Other "]},{"type":"single","class":"Later"}]}`))
	require.NoError(t, err)
	e.prefetchMetadata(state, 0)
	require.Equal(t, []string{"PhpStep", "Other"}, src.peeked)
	src.peeked = nil
	e.prefetchMetadata(state, 2)
	require.Empty(t, src.peeked, "no step after the last")
}

package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/queuety-go/queuety/queuety/queuetytest"
)

// The two middle steps carry the session's options; the others do not.
func TestRenderBindsTheMiddleSteps(t *testing.T) {
	d := queuetytest.NewDispatcher()
	if _, err := DispatchRender(context.Background(), d, "intro.mp4"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range d.Workflows()[0].State.Steps() {
		session := "-"
		if ws, ok := s.Get("worker_session"); ok {
			o, _ := ws.AsObject()
			id, _ := o.Get("session_id")
			session, _ = id.AsString()
		}
		got = append(got, s.Class()+":"+session)
	}
	if fmt.Sprint(got) != "[Plan:- RenderFrames:gpu-render AssembleManifest:gpu-render Publish:-]" {
		t.Fatalf("steps = %v", got)
	}
}

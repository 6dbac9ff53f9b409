package queuety

import (
	"reflect"
	"testing"
)

// TestWorkerPartsHoldNoWorker: the worker's parts get what they need
// (params structs, small interfaces, the registry of running attempts) and
// never the Worker itself, so none of them reaches into another's state.
// No part names it, nor stands behind another's interface: the runner is
// the claimer's jobStarter, the recorder the completer's completionWriter.
func TestWorkerPartsHoldNoWorker(t *testing.T) {
	worker := reflect.TypeFor[*Worker]()
	parts := []any{claimer{}, admitter{}, pausedCache{}, executor{}, runningSet{}, completer{}, heartbeater{}, sessionAgent{}, memorySampler{}, stateWriter{}, jobBeat{}, runner{}, recorder{}, claimScope{}}
	for _, p := range parts {
		typ := reflect.TypeOf(p)
		var walk func(reflect.Type, string)
		walk = func(ty reflect.Type, path string) {
			for i := range ty.NumField() {
				f := ty.Field(i)
				if f.Type == worker {
					t.Errorf("%s.%s is a *Worker", typ.Name(), path+f.Name)
				}
				if f.Type.Kind() == reflect.Struct {
					walk(f.Type, path+f.Name+".")
				}
			}
		}
		walk(typ, "")
	}
}

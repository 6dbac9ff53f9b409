package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/queuety/queuetytest"
)

// The same handlers without a database, as a user's unit tests run them.
func TestHandlersWithoutADatabase(t *testing.T) {
	ctx := context.Background()
	reg := Registry()
	if err := queuetytest.RunJob(ctx, reg, `App\Jobs\SendEmail`, map[string]any{"to": "a@b.c"}); err != nil {
		t.Fatal(err)
	}
	if err := queuetytest.RunJob(ctx, reg, `App\Jobs\SendEmail`, map[string]any{}); err == nil || err.Error() != "no recipient" {
		t.Fatalf("a job without a recipient: %v", err)
	}

	out, err := queuetytest.RunStep(ctx, reg, `App\Steps\PlaceOrder`, phpjson.NewObject().Set("qty", phpjson.Int(3)))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := phpjson.Encode(phpjson.ObjectValue(out)); string(b) != `{"order_id":"o-1","total":36}` {
		t.Fatalf("PlaceOrder's output = %s", b)
	}

	d := queuetytest.NewDispatcher()
	id, err := DispatchOrder(ctx, d, 2)
	if err != nil {
		t.Fatal(err)
	}
	wfs := d.Workflows()
	if len(wfs) != 1 || wfs[0].ID != id || wfs[0].Name != "order" {
		t.Fatalf("dispatched %+v", wfs)
	}
	var classes []string
	for _, s := range wfs[0].State.Steps() {
		classes = append(classes, string(s.Type())+" "+s.Class())
	}
	if got := fmt.Sprint(classes); got != `[single App\Steps\PlaceOrder local_activity App\Activities\SendReceipt]` {
		t.Fatalf("steps = %s", got)
	}
}

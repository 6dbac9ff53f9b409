package queuetytest_test

import (
	"context"
	"fmt"

	"github.com/queuety-go/queuety/queuety"
	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/queuety/queuetytest"
	"github.com/queuety-go/queuety/workflow"
)

// signups is an application's registry: its handlers dispatch through d,
// a *queuety.Client in the program and a recording fake in its tests.
func signups(d queuety.Dispatcher) *queuety.Registry {
	reg := queuety.NewRegistry()
	reg.Register(`App\Jobs\Signup`, queuety.Typed(func(ctx context.Context, j *queuety.Job, p struct {
		Email string `json:"email"`
	}) error {
		_, err := d.Dispatch(ctx, `App\Jobs\SendEmail`, map[string]any{"to": p.Email}, queuety.OnQueue("mail"), queuety.Delay(60e9))
		return err
	}))
	reg.RegisterStep(`App\Steps\Welcome`, func(ctx context.Context, s *workflow.State) (*phpjson.Object, error) {
		email, _ := s.Get("email")
		to, _ := email.AsString()
		b, err := workflow.New("onboarding").Then(`App\Steps\Tour`).Build(phpjson.NewObject().Set("user", phpjson.String(to)))
		if err != nil {
			return nil, err
		}
		id, _, err := d.DispatchWorkflow(ctx, b)
		if err != nil {
			return nil, err
		}
		return phpjson.NewObject().Set("onboarding_id", phpjson.Int(id)), nil
	})
	return reg
}

// A job handler run on a payload, and the job it dispatched.
func ExampleRunJob() {
	ctx := context.Background()
	d := queuetytest.NewDispatcher()
	if err := queuetytest.RunJob(ctx, signups(d), `App\Jobs\Signup`, map[string]any{"email": "a@b.c"}); err != nil {
		fmt.Println(err)
	}
	for _, j := range d.JobsOf(`App\Jobs\SendEmail`) {
		fmt.Println(j.Queue, j.Delay, string(j.Row.Payload))
	}
	// Output: mail 1m0s {"to":"a@b.c"}
}

// A step handler run on a state: its output, and the workflow it started.
func ExampleRunStep() {
	ctx := context.Background()
	d := queuetytest.NewDispatcher()
	out, err := queuetytest.RunStep(ctx, signups(d), `App\Steps\Welcome`, phpjson.NewObject().Set("email", phpjson.String("a@b.c")))
	if err != nil {
		fmt.Println(err)
	}
	b, _ := phpjson.Encode(phpjson.ObjectValue(out))
	fmt.Println(string(b))
	for _, w := range d.Workflows() {
		input, _ := phpjson.Encode(phpjson.ObjectValue(w.State.Public()))
		fmt.Println(w.ID, w.Name, string(input), w.State.Steps()[0].Class())
	}
	// Output:
	// {"onboarding_id":1}
	// 1 onboarding {"user":"a@b.c"} App\Steps\Tour
}

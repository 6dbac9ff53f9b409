package workflow

import (
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// LocalActivity adds a local activity step (durable-workflow's
// localActivity(Class, new LocalActivityOptions(...))): class runs in the
// process of the worker that advanced the workflow, right after the
// previous step committed, with the retry and timeout options given; its
// output is merged into the state like a single step's. Named sets the
// step's name. Routing options (Queue, Connection, WorkerSession,
// ScheduleToStartTimeout) fail the build with ErrLocalActivityRouting's
// message, and so do values outside the schema's ranges.
//
//	workflow.New("order").
//		Then("ChargeCard").
//		LocalActivity("SendReceiptActivity", workflow.LocalActivityOptions{
//			MaxAttempts: 3, StartToCloseTimeout: 10, ScheduleToCloseTimeout: 30, HeartbeatTimeout: 5,
//		})
func (b *Builder) LocalActivity(class string, opts LocalActivityOptions, named ...ThenOption) *Builder {
	if !b.ok() {
		return b
	}
	if class == "" {
		return b.fail("local_activity", InvalidArgumentException, "Local activity class cannot be empty.")
	}
	if err := opts.validate(); err != nil {
		return b.fail("local_activity", InvalidArgumentException, err.Error())
	}
	c := collect(named)
	if c.err != nil {
		return b.failf("local_activity", "%v", c.err)
	}
	name := c.nameOr(strconv.Itoa(len(b.steps)))
	return b.add(builderStep{typ: StepLocalActivity, name: name, body: fixed(phpjson.NewObject().
		Set("type", phpjson.String(string(StepLocalActivity))).
		Set("name", phpjson.String(name)).
		Set("class", phpjson.String(class)).
		Set(LocalActivityKey, phpjson.ObjectValue(opts.snapshot())))})
}

package workflow_test

import (
	"fmt"
	"time"

	"github.com/queuety-go/queuety/queuety/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// A builder writes the workflow row PHP's Queuety::workflow()->dispatch()
// writes: the state column is the initial state plus the reserved keys, the
// step list under _steps in the plugin's shapes and key order, byte for
// byte as json_encode writes them.
func ExampleBuilder_Build() {
	d, err := workflow.New("generate_report").
		Then("App\\Steps\\FetchData").
		Then("App\\Steps\\Summarize", workflow.Named("summary")).
		Build(phpjson.NewObject().Set("user_id", phpjson.Int(42)))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Workflow.Name, d.Workflow.TotalSteps)
	fmt.Println(string(d.Workflow.State))
	fmt.Println(d.Jobs[0].Handler, d.Jobs[0].Queue)
	// Output:
	// generate_report 2
	// {"user_id":42,"_steps":[{"type":"single","name":"0","class":"App\\Steps\\FetchData"},{"type":"single","name":"summary","class":"App\\Steps\\Summarize"}],"_queue":"default","_priority":0,"_max_attempts":3,"_definition_hash":"559b07fef107e91df00c851458128a6b28a6b82d5314933bbf0b381cd28f3354"}
	// App\Steps\FetchData default
}

// Parallel branches, a for_each over a state key with a quorum, a delay and
// a signal wait serialize as the plugin's step types.
func ExampleBuilder_Steps() {
	b := workflow.New("editorial").
		Parallel("App\\Steps\\BranchA", "App\\Steps\\BranchB").
		ForEach("items", "App\\Steps\\ItemStep", workflow.Quorum(2), workflow.Reducer("App\\Steps\\SumReducer")).
		Delay(90 * time.Second).
		WaitForApproval()
	steps, err := b.Steps()
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, s := range steps {
		fmt.Println(i, s.Type())
	}
	// Output:
	// 0 parallel
	// 1 for_each
	// 2 delay
	// 3 wait_for_signal
}

// A mistake in the chain is reported by Build (and Err), naming the method,
// as the plugin throws from the builder call.
func ExampleBuilder_Err() {
	_, err := workflow.New("bad").CompensateWith("App\\Steps\\Refund").Then("App\\Steps\\Charge").Build(nil)
	fmt.Println(err)
	// Output:
	// workflow: compensate_with: Cannot attach compensation before adding a step.
}

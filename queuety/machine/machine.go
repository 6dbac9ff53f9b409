// Package machine is the public face of queuety's state machines, the
// plugin's StateMachine run by a Go worker: a Builder writes the
// definition the plugin's Queuety::machine() builder writes, and Go
// implementations of action and guard classes (Action, Guard) are
// registered on a queuety.Registry (RegisterStateAction,
// RegisterStateGuard). Dispatch a machine and send it events with
// queuety.Client (DispatchMachine, MachineEvent); read it back with
// Client.Machine and Client.MachineTimeline.
//
//	b := machine.New("order").
//		State("draft", "").Action("DraftAction", nil).On("submit", "review", "", "").
//		State("review", "").On("approve", "done", "ApproveGuard", "").
//		State("done", machine.StatusCompleted)
//	id, _, err := client.DispatchMachine(ctx, b, map[string]any{"order": 42})
//
// The names here are aliases of the runtime's (queuety/internal/machine)
// and the only public names of these types: queuety's API names them
// from here (Client.DispatchMachine takes a *Builder, Client.Machine
// returns a Status).
package machine

import imachine "github.com/queuety-go/queuety/queuety/internal/machine"

// Builder defines a state machine the way the plugin's Queuety::machine()
// builder does, and writes the same definition bytes
// (StateMachineBuilder::build_runtime_definition, definition_hash
// included). Errors are kept until Definition or DispatchMachine reports
// the first one.
type Builder = imachine.Builder

// New starts a machine definition: queue "default", priority low, three
// attempts per action job.
func New(name string) *Builder { return imachine.NewBuilder(name) }

// Call is what a state action or guard is given, the arguments of the
// plugin's StateAction::handle / StateGuard::allows as JSON (PHP's
// encoding, key order kept). Event is "" when the state was entered
// without one.
type Call = imachine.Call

// Action is a Go implementation of a state's action class
// (Queuety\Contracts\StateAction). It returns a JSON object (its string
// keys not starting with "_" are merged into the machine's state; "_event"
// names an event to apply, "_event_payload" its payload) or a JSON string
// (the event to apply). An error fails the action job's attempt.
type Action = imachine.Action

// Guard is a Go implementation of a transition's guard class
// (Queuety\Contracts\StateGuard): the transition is taken when it returns
// true.
type Guard = imachine.Guard

// Status is a state machine as StateMachine::get_status reports it
// (Client.Machine, Client.Machines).
type Status = imachine.Status

// Event is one row of a machine's timeline (Client.MachineTimeline); JSON
// columns are their stored bytes.
type Event = imachine.Event

// ActionHandler is the handler of a state machine's action jobs.
const ActionHandler = imachine.ActionHandler

// The statuses of a machine (StateMachineStatus); a terminal state of a
// Builder takes one of completed, failed, cancelled or paused.
const (
	StatusRunning      = imachine.StatusRunning
	StatusWaitingEvent = imachine.StatusWaitingEvent
	StatusCompleted    = imachine.StatusCompleted
	StatusFailed       = imachine.StatusFailed
	StatusPaused       = imachine.StatusPaused
	StatusCancelled    = imachine.StatusCancelled
)

// ErrEventRejected wraps the reason a machine refused an event
// (Queuety::machine_event throws it); the event_rejected row is written.
var ErrEventRejected = imachine.ErrEventRejected

// Package machine is the state machine runtime: the plugin's
// StateMachine, run from its rows. Runtime runs action jobs
// (HandleAction), external events with their guards (Event), failed
// actions (FailAction) and dispatches (Dispatch); Builder writes the
// definition bytes the plugin's builder writes.
//
// The public names live in queuety/machine (aliases of these) and in
// queuety (MachineBuilder, StateAction, …); the composition root in
// queuety builds a Runtime per use over the Client's store, with the
// Registry's Go actions and guards and its PHP pool as Handlers.
package machine

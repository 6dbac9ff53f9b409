package httpapi

import "time"

// The published runtime contracts. Their values are fixed by
// worker-sessions-runtime.schema.json and local-activity-runtime.schema.json
// (most are const or enum there); the key order follows durable-workflow's
// WorkerProtocolVersion::workerSessionSemantics and
// LocalActivityContract::manifest so the documents read side by side.

var sessionVerbs = []string{"create", "heartbeat", "close"}

var sessionStatuses = []string{"active", "closed", "expired", "failed", "orphaned"}

// workerSessionContract is the worker_sessions capability: the §4.1
// contract plus the server's supported flag (and, when unavailable, why).
func workerSessionContract(available bool) object {
	o := object{
		{"feature", "worker_sessions"},
		{"contract_version", "1.0"},
		{"minimum_protocol_version", SessionsMinimumVersion},
		{"command_field", "worker_session"},
		{"activity_options_field", "worker_session"},
		{"verbs", sessionVerbs},
		{"lifecycle", object{
			{"creation", "lazy_create_on_first_admitted_activity_or_explicit_worker_create"},
			{"renewal", "activity_heartbeat_or_explicit_session_heartbeat"},
			{"close", "explicit_holder_close"},
			{"lease_expiry", "session_expires_when_lease_is_not_renewed"},
			{"ttl_expiry", "absolute_session_ttl_is_terminal_for_that_session_id"},
		}},
		{"ownership", "single_worker_lease_owner"},
		{"lease", object{
			{"scope", "namespace_session_id"},
			{"owner", "registered_worker_id"},
			{"activity_attempt_leases_remain_independent", true},
		}},
		{"admission", object{
			{"queue_routing_first", true},
			{"requires_registered_worker", true},
			{"requires_capabilities", true},
			{"create_if_missing_default", true},
			{"allow_reacquire_after_failure_default", true},
		}},
		{"rollout_safety", object{
			{"minimum_protocol_version", SessionsMinimumVersion},
			{"mixed_server_rollout_fenced_by_protocol_version", true},
			{"servers_below_minimum_must_reject_worker_session_commands", true},
			{"servers_below_minimum_must_not_claim_worker_session_activity_tasks", true},
		}},
		{"limits", object{
			{"max_concurrent_worker_sessions", "worker_registration"},
			{"max_concurrent_activities", "session"},
		}},
		{"default_max_concurrent_activities", 1},
		{"renewal", object{
			{"activity_heartbeat_renews_session", true},
			{"explicit_session_heartbeat", true},
		}},
		{"failure_detection", []string{"lease_expiry", "registered_worker_heartbeat_staleness"}},
		{"holder_loss", object{
			{"in_flight_activities_keep_at_least_once_attempt_semantics", true},
			{"replacement_worker_must_reacquire_session", true},
			{"process_local_state_must_be_rebuilt_after_reacquire", true},
		}},
		{"cancellation", object{
			{"workflow_cancellation_observed_through_activity_heartbeat", true},
			{"session_lease_does_not_override_activity_cancel_requested", true},
			{"planned_shutdown_should_close_sessions", true},
		}},
		{"routing", []string{"queue", "connection", "requirements"}},
		{"visibility", sessionStatuses},
		{"statuses", sessionStatuses},
		{"terminal_statuses", []string{"closed"}},
		{"terminal_conditions", []string{"explicit_close", "ttl_expired", "allow_reacquire_after_failure_false"}},
		{"authoring_guidance", []string{
			"use_for_process_local_state_gpu_memory_or_filesystem_affinity",
			"prefer_ordinary_queued_activities_for_independent_steps",
			"prefer_one_larger_activity_for_atomic_side_effects",
		}},
		{"supported", available},
	}
	if !available {
		o = append(o, field{"unavailable_reason", "worker_protocol_version_below_worker_session_minimum"})
	}
	return o
}

// localActivityContract is the local_activities capability (§4.2).
//
// The schema pins the api block to durable-workflow's PHP names, so they
// are emitted as they are, for validation; queuety-go's own entry points
// are named beside them under api.queuety (extra keys are allowed): the Go
// builder's LocalActivity step and the PHP bridge's ->local_activity().
func localActivityContract() object {
	return object{
		{"schema", "durable-workflow.v2.local-activity.contract"},
		{"version", 1},
		{"api", object{
			{"functions", []string{`Workflow\V2\localActivity`}},
			{"workflow_facade", []string{`Workflow\V2\Workflow::localActivity`, `Workflow\V2\Workflow::executeLocalActivity`}},
			{"options", `Workflow\V2\Support\LocalActivityOptions`},
			{"queuety", object{
				{"go_builder", "workflow.Builder.LocalActivity"},
				{"php_bridge", `Queuety\Queuety::workflow(...)->local_activity(Class, new Queuety\LocalActivityOptions(...))`},
				{"step_type", "local_activity"},
			}},
		}},
		{"execution", object{
			{"mode", "local"},
			{"same_process", true},
			{"ordinary_activity_task_created", false},
			{"history_events", []string{
				"ActivityScheduled", "ActivityStarted", "ActivityHeartbeatRecorded", "ActivityRetryScheduled",
				"ActivityCompleted", "ActivityFailed", "ActivityTimedOut", "ActivityCancelled",
			}},
			{"history_marker", object{{"execution_mode", "local"}, {"local_activity", true}}},
		}},
		{"heartbeating", object{
			{"lease", "workflow_task"},
			{"automatic_points", []string{"before_attempt_start", "after_activity_heartbeat"}},
			{"long_running_requirement", "activity_code_calls_heartbeat_before_the_workflow_task_lease_can_expire"},
		}},
		{"cancellation", object{
			{"preemption", "cooperative"},
			{"observed_at", []string{"heartbeat", "timeout_enforcement", "attempt_completion"}},
			{"terminal_event", "ActivityCancelled"},
		}},
		{"shutdown", object{
			{"graceful", "worker_stops_claiming_new_workflow_tasks_and_allows_in_process_attempt_to_finish_or_heartbeat"},
			{"crash", "workflow_task_lease_expires_and_task_repair_reclaims_the_workflow_task"},
			{"cold_replay", "committed_terminal_event_is_replayed_or_started_attempt_without_terminal_event_schedules_local_retry"},
		}},
		{"routing", object{
			{"admission", "activity_class_must_resolve_in_the_workflow_worker_process"},
			{"queue_bypassed", true},
			{"rejected_options", []string{"connection", "queue", "worker_session", "schedule_to_start_timeout"}},
		}},
		{"retry", object{
			{"new_attempt_when", []string{
				"a local attempt starts",
				"a retry workflow task replays after backoff",
				"cold replay finds a previously started local attempt without a terminal event",
			}},
			{"backoff", "durable_workflow_task_available_at"},
			{"cold_replay_reason", "cold_replay"},
		}},
		{"timeouts", object{
			{"start_to_close_timeout", "one_local_attempt"},
			{"schedule_to_close_timeout", "entire_local_execution_including_retries"},
			{"heartbeat_timeout", "gap_between_recorded_local_activity_heartbeats"},
			{"enforcement", "cooperative_at_heartbeat_attempt_start_and_attempt_completion_boundaries"},
		}},
		{"visibility", object{
			{"activity_execution_marker", "activity_options.execution_mode"},
			{"history_marker", "payload.execution_mode"},
			{"metrics_marker", "activities.local_*"},
			{"history_export", "same_activity_event_payloads_with_execution_mode_local"},
		}},
		{"supported", true},
	}
}

// Registration heartbeat defaults advertised in worker_status (spec §2.3).
const defaultHeartbeatIntervalSeconds = 10

// serverCapabilities is the server_capabilities object of every worker
// envelope and of cluster info.
func (s *Server) serverCapabilities(sessions bool) object {
	verbs := []string{}
	if sessions {
		verbs = sessionVerbs
	}
	return object{
		{"long_poll_timeout", int(s.cfg.PollTimeout / time.Second)},
		{"max_long_poll_timeout", int(maxPollTimeout / time.Second)},
		{"activity_tasks", s.cfg.Tasks != nil},
		{"activity_task_verbs", []string{"poll", "heartbeat", "complete", "fail"}},
		{"worker_session_verbs", verbs},
		{"worker_sessions", workerSessionContract(sessions)},
		{"local_activities", localActivityContract()},
		{"worker_status", object{
			{"supported", true},
			{"heartbeat_interval_seconds", defaultHeartbeatIntervalSeconds},
			{"stale_after_seconds", int(s.cfg.StaleAfter / time.Second)},
			{"fields", object{
				{"task_slots", []string{"workflow_available", "activity_available", "session_available"}},
				{"process_metrics", []string{"cpu_percent", "memory_bytes", "process_uptime_seconds", "process_id", "host", "process_started_at"}},
			}},
		}},
	}
}

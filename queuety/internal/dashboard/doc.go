// Package dashboard is the operator's web dashboard at /ui/: queues with
// their backlog and pause state, what needs attention (buried jobs grouped
// by handler and error, stale processing jobs, jobs that can never run,
// failed workflows, workflows waiting for a signal), workers and PHP pool
// processes, 24 hours of throughput, lists of jobs and workflows with
// filters and bulk actions, and a page per workflow.
//
// It is server-rendered (html/template, plain forms, no script), its
// assets are embedded, and every action goes through the queuety.Client
// methods the CLI uses. Access: the operator token, typed once on the
// login page (then a signed, HttpOnly session cookie) or sent as
// Authorization: Bearer. Forms carry a token bound to the session, and
// net/http's cross-origin protection refuses cross-site posts; a
// read-only mode refuses every action.
package dashboard

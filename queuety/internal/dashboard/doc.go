// Package dashboard is the operator's web dashboard at /ui/: queues with
// their backlog and pause state, throughput (completed and failed per
// minute over the hour, per 15 minutes over the day), what needs
// attention (buried jobs grouped by handler, error class and normalized
// message, stale processing jobs, jobs that can never run, failed
// workflows, workflows waiting for a signal), lists of jobs (with search)
// and workflows with filters and bulk actions, a page per job (trace and
// log rows) and per workflow, and pages for schedules, batches, state
// machines, webhooks, and workers with their sessions. With Config.Sites
// it shows many sites (a multisite network, a host's sites): an all-sites
// overview at /ui/ (each site's backlog, failures, stuck rows, or why it
// cannot be read, the sites needing attention first), every page of a
// site under /ui/sites/<key>/, and a site switcher on every page.
//
// It is server-rendered (html/template, plain forms); one small script
// (static/live.js) refreshes a page while its tab is visible. Its assets
// are embedded, and every action goes through the queuety.Client methods
// the CLI uses. Access: the operator token, typed once on the login page
// (then a signed, HttpOnly session cookie keyed from the token, so it
// survives a restart) or sent as Authorization: Bearer. Forms carry a
// token bound to the session, and net/http's cross-origin protection
// refuses cross-site posts; a read-only mode refuses every action.
package dashboard

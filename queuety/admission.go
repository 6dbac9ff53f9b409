package queuety

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Rate limits, cost budgets and debug rows, applied when a claim admits its
// rows (admitter.admit), with the plugin's rules from the same rows:
//
//   - Rate limit (RateLimiter, Worker::register_job_rate_limit): the job's
//     __queuety_runtime.rate_limit, else its handler's (WithRateLimit, a Go
//     step's metadata, a PHP class's config() read through the pool). The
//     count is the handler's `completed` log rows of the last window, PHP
//     workers' included, plus its processing jobs (see rate-limit-used).
//   - Concurrency group limit (ResourceManager::admit, first check): in
//     admitter.admit.
//   - Queue and group cost budgets (QUEUETY_RESOURCE_QUEUE/GROUP_COST_BUDGETS):
//     a job with cost_units > 0 is refused when the processing jobs' cost
//     plus its own would pass the budget.
//
// A refused row stays locked but unwritten in the claim, so when the claim
// commits it is pending exactly as before, attempts unspent and available_at
// untouched: the end state of the plugin's claim-then-unclaim. Each check
// takes a named lock per handler, queue or group, held until the claim
// commits, so two Go workers never admit past a limit between them.
//
// Unlike the plugin's worker, which takes one job and stops at a refused
// head job (its flush gives up after refusing the same job twice), a claim
// goes on to the rows behind a refused one: jobs of other handlers, groups
// and queues do not wait behind a saturated limit.

// admitter decides which of the rows a claim locked it takes: the
// concurrency groups (group_admission.go), the rate limits and cost budgets
// below, the memory and time admission (resource_admission.go), and the
// debug and started rows it writes for them. One claim's state is a
// groupAdmission; the admitter holds only what every claim shares.
type admitter struct {
	reg *Registry
	log *slog.Logger
	// resources is the plugin's memory and time admission.
	resources *resourceAdmission
	// debug: QUEUETY_DEBUG's rows (Config.Debug).
	debug bool
	// queueBudgets and groupBudgets are Config's cost budgets.
	queueBudgets, groupBudgets map[string]int64
	// steps: the worker runs workflows, so a row with a workflow id is a
	// step (its rows are the engine's to write).
	steps bool
}

func (ad *admitter) isStep(row *store.JobRow) bool { return ad.steps && row.WorkflowID.Valid }

// limitAdmission is one claim's view of the rate limits and cost budgets
// it met, and its debug rows.
type limitAdmission struct {
	rates      map[string]*rateUse
	queueCosts map[string]*costUse
	groupCosts map[string]*costUse
	// limited are handlers found rate limited: later reads leave them out.
	limited map[string]bool
	// waiting are queues whose next row waits for its PHP class's settings:
	// the claim takes nothing more from them, so their jobs still start in
	// order (a batch's callbacks, a chain, see them in the plugin's order).
	waiting map[string]bool
	// unread are the PHP classes those rows wait for: the claim loop
	// reads them before its next round (a round that deferred rows for
	// them is not an empty one).
	unread map[string]bool
	// seen are the rows this claim took or deferred.
	seen []int64
	// debug turns the QUEUETY_DEBUG rows on; logs then holds them with the
	// admitted rows' started rows, in the order the plugin writes them, and
	// logged marks the rows whose started row is there.
	debug  bool
	logs   []store.LogRow
	logged map[int64]bool
}

type rateUse struct {
	limit workflow.RateLimit
	// first is the claim's first row of the handler: slots are kept for
	// the rows ahead of it (RateLimitUsed).
	first  *store.JobRow
	used   int
	locked bool
}

type costUse struct {
	used   int64
	locked bool
}

// limitLockWait is how long a claim waits for another claim's admission of
// the same handler, queue or group before deferring its rows.
const limitLockWait = time.Second

// rowLimit is what the admission needs of one row.
type rowLimit struct {
	rate *workflow.RateLimit
	// unknown: the row's PHP class settings are still being read; the row
	// waits for the next claim.
	unknown bool
}

// prepareLimits reads the limits of rows and locks and counts the handlers,
// queues and groups the claim has not met yet.
func (ad *admitter) prepareLimits(ctx context.Context, tx *store.ClaimTx, g *groupAdmission, rows []store.JobRow) ([]rowLimit, error) {
	l := &g.limitAdmission
	if l.rates == nil {
		l.rates, l.queueCosts, l.groupCosts, l.limited = map[string]*rateUse{}, map[string]*costUse{}, map[string]*costUse{}, map[string]bool{}
	}
	limits := make([]rowLimit, len(rows))
	var handlers, queues, groups []string
	for i := range rows {
		r := &rows[i]
		limits[i] = ad.rateLimitOf(r)
		if rl := limits[i].rate; rl != nil && l.rates[r.Handler] == nil {
			handlers = append(handlers, r.Handler)
			l.rates[r.Handler] = &rateUse{limit: *rl, first: r}
		}
		if r.CostUnits <= 0 {
			continue
		}
		if ad.queueBudgets[r.Queue] > 0 && l.queueCosts[r.Queue] == nil {
			l.queueCosts[r.Queue] = &costUse{}
			queues = append(queues, r.Queue)
		}
		if r.ConcurrencyGroup.Valid {
			if name := r.ConcurrencyGroup.String; ad.groupBudgets[name] > 0 && l.groupCosts[name] == nil {
				l.groupCosts[name] = &costUse{}
				groups = append(groups, name)
			}
		}
	}
	if len(handlers) > 0 {
		locked, err := tx.LockRates(ctx, handlers, limitLockWait)
		if err != nil {
			return nil, err
		}
		for _, h := range locked {
			u := l.rates[h]
			if u.used, err = tx.RateLimitUsed(ctx, u.first, u.limit.Window); err != nil {
				return nil, err
			}
			u.locked = true
		}
	}
	if len(queues) > 0 {
		locked, err := tx.LockQueueCosts(ctx, queues, limitLockWait)
		if err != nil {
			return nil, err
		}
		for _, q := range locked {
			u := l.queueCosts[q]
			if u.used, err = tx.QueueCostProcessing(ctx, q); err != nil {
				return nil, err
			}
			u.locked = true
		}
	}
	if len(groups) > 0 {
		locked, err := tx.LockGroupCosts(ctx, groups, limitLockWait)
		if err != nil {
			return nil, err
		}
		for _, name := range locked {
			u := l.groupCosts[name]
			if u.used, err = tx.GroupCostProcessing(ctx, name); err != nil {
				return nil, err
			}
			u.locked = true
		}
	}
	return limits, nil
}

// admitsRate applies the rate limit (Worker::run's check before
// admission); false defers the row.
func (ad *admitter) admitsRate(g *groupAdmission, r *store.JobRow, lim rowLimit) bool {
	l := &g.limitAdmission
	if lim.unknown {
		ad.log.Debug("deferring job: its PHP class's settings are being read", "job", r.ID, "handler", r.Handler)
		if l.waiting == nil {
			l.waiting, l.unread = map[string]bool{}, map[string]bool{}
		}
		l.waiting[r.Queue] = true
		l.unread[r.Handler] = true
		return false
	}
	if lim.rate == nil {
		return true
	}
	u := l.rates[r.Handler]
	if u.locked && int64(u.used) < u.limit.Max {
		return true
	}
	l.limited[r.Handler] = true
	if l.debug {
		l.debugf(r.Queue, "Handler %s is rate-limited, unclaiming job #%d.", r.Handler, r.ID)
	}
	ad.log.Debug("deferring job: handler rate limited", "job", r.ID, "handler", r.Handler, "max", u.limit.Max, "window", u.limit.Window)
	return false
}

// budgetRefusal is why the cost budgets refuse a row, or "".
func (ad *admitter) budgetRefusal(g *groupAdmission, r *store.JobRow) string {
	l := &g.limitAdmission
	if r.CostUnits <= 0 {
		return ""
	}
	if budget := ad.queueBudgets[r.Queue]; budget > 0 {
		u := l.queueCosts[r.Queue]
		if !u.locked {
			return fmt.Sprintf("Queue '%s' cost budget is being admitted by another worker.", r.Queue)
		}
		if u.used+r.CostUnits > budget {
			return fmt.Sprintf("Queue '%s' cost budget is exhausted (%d/%d).", r.Queue, u.used, budget)
		}
	}
	if r.ConcurrencyGroup.Valid {
		name := r.ConcurrencyGroup.String
		if budget := ad.groupBudgets[name]; budget > 0 {
			u := l.groupCosts[name]
			if !u.locked {
				return fmt.Sprintf("Concurrency group '%s' cost budget is being admitted by another worker.", name)
			}
			if u.used+r.CostUnits > budget {
				return fmt.Sprintf("Concurrency group '%s' cost budget is exhausted (%d/%d).", name, u.used, budget)
			}
		}
	}
	return ""
}

// takeLimits counts an admitted row against its limits.
func (ad *admitter) takeLimits(g *groupAdmission, r *store.JobRow, lim rowLimit) {
	l := &g.limitAdmission
	if lim.rate != nil {
		l.rates[r.Handler].used++
	}
	if r.CostUnits <= 0 {
		return
	}
	if u := l.queueCosts[r.Queue]; u != nil {
		u.used += r.CostUnits
	}
	if r.ConcurrencyGroup.Valid {
		if u := l.groupCosts[r.ConcurrencyGroup.String]; u != nil {
			u.used += r.CostUnits
		}
	}
}

// rateLimitOf finds the rate limit of a claimed row, as
// register_job_rate_limit does: the payload's __queuety_runtime first,
// then the handler's.
func (ad *admitter) rateLimitOf(r *store.JobRow) rowLimit {
	if strings.Contains(r.Payload, `"rate_limit"`) {
		if rl := runtimeRateLimit(r.Payload); rl != nil {
			return rowLimit{rate: rl}
		}
	}
	if workflow.IsPlaceholderHandler(r.Handler) {
		return rowLimit{}
	}
	if !r.WorkflowID.Valid {
		if h, ok := ad.reg.lookup(r.Handler); ok && ad.reg.goHandler(r.Handler) {
			return rowLimit{rate: h.opts.rateLimit}
		}
	} else if ad.reg.goStep(r.Handler) {
		return rowLimit{rate: ad.reg.steps.HandlerMetadata(r.Handler).RateLimit}
	}
	src := ad.reg.classMetadata()
	if src == nil {
		return rowLimit{}
	}
	m, ok := src.PeekClassMetadata(r.Handler)
	if !ok {
		return rowLimit{unknown: true}
	}
	return rowLimit{rate: m.RateLimit}
}

// runtimeRateLimit reads __queuety_runtime.rate_limit: a list of at least
// two entries, cast with (int) (StepDispatchOptions::runtime_from_payload).
func runtimeRateLimit(payload string) *workflow.RateLimit {
	v, err := phpjson.DecodeString(payload)
	if err != nil {
		return nil
	}
	obj, ok := v.AsObject()
	if !ok {
		return nil
	}
	rtv, _ := obj.Get(runtimeKey)
	rt, ok := rtv.AsObject()
	if !ok {
		return nil
	}
	rlv, _ := rt.Get("rate_limit")
	list, ok := rlv.AsList()
	if !ok || len(list) < 2 {
		return nil
	}
	return &workflow.RateLimit{Max: phpjson.ToInt(list[0]), Window: phpjson.ToInt(list[1])}
}

// debugf adds a QUEUETY_DEBUG row (Worker::debug_log): event debug, handler
// _worker, no job, context {"message"}. Nothing when debug is off.
func (l *limitAdmission) debugf(queue, format string, a ...any) {
	if !l.debug {
		return
	}
	msg := format
	if len(a) > 0 {
		msg = fmt.Sprintf(format, a...)
	}
	l.logs = append(l.logs, debugRow(queue, msg))
}

func debugRow(queue, msg string) store.LogRow { return workerRow(queue, store.EventDebug, msg) }

// workerRow is a log row of the worker itself (Logger::log with handler
// _worker): no job, the message in context.
func workerRow(queue, event, msg string) store.LogRow {
	ctx, _ := phpjson.Encode(phpjson.ObjectValue(phpjson.NewObject().Set("message", phpjson.String(msg))))
	return store.LogRow{Handler: "_worker", Queue: queue, Event: event, Context: store.String(string(ctx))}
}

// logAdmitted puts an admitted row's started row (plain jobs; the engine
// writes a step's) and its "Resolving handler" row among the debug rows.
func (ad *admitter) logAdmitted(g *groupAdmission, r *store.JobRow) {
	l := &g.limitAdmission
	if !l.debug {
		return
	}
	if l.logged == nil {
		l.logged = map[int64]bool{}
	}
	l.logged[r.ID] = true
	if ad.isStep(r) {
		return
	}
	l.logs = append(l.logs, startedLog(r))
	switch {
	case r.Handler == machineActionHandler:
		// The plugin runs a machine's action job before its handler
		// resolution, so it writes no debug row for it.
	case ad.isJobClass(r.Handler):
		l.debugf(r.Queue, "Deserializing job class: %s", r.Handler)
	default:
		l.debugf(r.Queue, "Resolving handler: %s", r.Handler)
	}
}

// isJobClass tells whether a PHP handler is a Contracts\Job class, from the
// class settings the claim has already read (a row is admitted only once
// they are known). A Go handler is never one.
func (ad *admitter) isJobClass(handler string) bool {
	if ad.reg.goHandler(handler) {
		return false
	}
	src := ad.reg.classMetadata()
	if src == nil {
		return false
	}
	m, ok := src.PeekClassMetadata(handler)
	return ok && m.Job != nil
}

// claimLogs are the log rows a claim commits: the started rows of the plain
// jobs it took and, with debug on, the debug rows around them.
func (ad *admitter) claimLogs(g *groupAdmission, rows []store.JobRow) []store.LogRow {
	l := &g.limitAdmission
	logs := make([]store.LogRow, 0, len(rows)+len(l.logs))
	for i := range rows {
		if ad.isStep(&rows[i]) || l.logged[rows[i].ID] {
			continue // the engine writes its started log and step_started event
		}
		logs = append(logs, startedLog(&rows[i]))
	}
	return append(logs, l.logs...)
}

// normalizeBudgets is Config::normalize_int_map_constant: names trimmed,
// blank names and budgets below 1 dropped.
func normalizeBudgets(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		if k = phpjson.Trim(k); k != "" && v >= 1 { // normalize_int_map_constant trims with trim()
			out[k] = v
		}
	}
	return out
}

func (l *limitAdmission) limitedList() []string {
	out := make([]string, 0, len(l.limited))
	for h := range l.limited {
		out = append(out, h)
	}
	return out
}

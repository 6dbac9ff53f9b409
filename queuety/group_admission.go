package queuety

import (
	"context"
	"time"

	store "github.com/queuety-go/queuety/sql"
)

// maxGroupRereads bounds the reads of one queue in one claim when its
// candidates keep hitting saturated groups.
const maxGroupRereads = 4

// groupAdmission is one claim's view of the concurrency groups it met:
// their processing counts (read once, under the group's named lock) and
// which of them are saturated.
type groupAdmission struct {
	busy      map[string]int
	locked    map[string]bool
	saturated map[string]bool
	// rate limits, cost budgets and debug rows (admission.go)
	limitAdmission
}

func (ad *admitter) newGroupAdmission() *groupAdmission {
	return &groupAdmission{busy: map[string]int{}, locked: map[string]bool{}, saturated: map[string]bool{},
		limitAdmission: limitAdmission{debug: ad.debug}}
}

func (g *groupAdmission) saturatedList() []string {
	out := make([]string, 0, len(g.saturated))
	for name := range g.saturated {
		out = append(out, name)
	}
	return out
}

// admit applies Queuety's concurrency-group limit (ResourceManager::admit,
// first check): a job whose group already has concurrency_limit jobs
// processing is not started. It stays locked but unwritten in the claim, so
// at commit it is simply pending again with its attempt unspent, as PHP's
// unclaim leaves it. The group's named lock, held until the claim commits,
// keeps two Go workers from admitting past the limit at once. It returns
// the admitted rows and how many it deferred. Rate limits and cost budgets
// are checked around it, in the plugin's order (admission.go).
func (ad *admitter) admit(ctx context.Context, tx *store.ClaimTx, g *groupAdmission, rows []store.JobRow) ([]store.JobRow, int, error) {
	var fresh []string
	for i := range rows {
		if rows[i].ConcurrencyGroup.Valid && rows[i].ConcurrencyLimit.Valid {
			if name := rows[i].ConcurrencyGroup.String; !g.locked[name] && !g.saturated[name] {
				fresh = append(fresh, name)
			}
		}
	}
	if len(fresh) > 0 {
		locked, err := tx.LockGroups(ctx, fresh, time.Second)
		if err != nil {
			return nil, 0, err
		}
		busy, err := tx.ProcessingByGroup(ctx, locked)
		if err != nil {
			return nil, 0, err
		}
		for _, name := range locked {
			g.locked[name], g.busy[name] = true, busy[name]
		}
	}
	limits, err := ad.prepareLimits(ctx, tx, g, rows)
	if err != nil {
		return nil, 0, err
	}
	admitted := rows[:0:0]
	deferred := 0
	for i, r := range rows {
		g.seen = append(g.seen, r.ID)
		if g.waiting[r.Queue] {
			deferred++ // behind a row waiting for its class's settings
			continue
		}
		if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
			g.debugf(r.Queue, "Checking rate limit for handler: %s", r.Handler)
		}
		if !ad.admitsRate(g, &r, limits[i]) {
			deferred++
			continue
		}
		grouped := r.ConcurrencyGroup.Valid && r.ConcurrencyLimit.Valid
		if grouped {
			name := r.ConcurrencyGroup.String
			if !g.locked[name] || g.busy[name] >= int(r.ConcurrencyLimit.Int64) {
				// Not locked within the timeout: another claim is admitting
				// this group; it is left out of this claim's later reads too.
				g.saturated[name] = true
				deferred++
				if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
					g.debugf(r.Queue, "Deferring job #%d (%s): Concurrency group '%s' is saturated (%d/%d).", r.ID, r.Handler, name, g.busy[name], r.ConcurrencyLimit.Int64)
				}
				ad.log.Debug("deferring job: concurrency group saturated", "job", r.ID, "group", name, "limit", r.ConcurrencyLimit.Int64)
				continue
			}
		}
		if reason := ad.budgetRefusal(g, &r); reason != "" {
			deferred++
			if g.debug { // QUEUETY_DEBUG; the arguments are not built when off
				g.debugf(r.Queue, "Deferring job #%d (%s): %s", r.ID, r.Handler, reason)
			}
			ad.log.Debug("deferring job: cost budget", "job", r.ID, "reason", reason)
			continue
		}
		reason, err := ad.resources.refusal(ctx, tx, &r) // memory and time (resource_admission.go)
		if err != nil {
			return nil, 0, err
		}
		if reason != "" {
			deferred++
			if g.debug {
				g.debugf(r.Queue, "Deferring job #%d (%s): %s", r.ID, r.Handler, reason)
			}
			ad.log.Debug("deferring job: resource admission", "job", r.ID, "reason", reason)
			continue
		}
		if grouped {
			g.busy[r.ConcurrencyGroup.String]++
		}
		ad.takeLimits(g, &r, limits[i])
		ad.logAdmitted(g, &r)
		admitted = append(admitted, r)
	}
	return admitted, deferred, nil
}

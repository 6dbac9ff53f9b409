package phppool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/workflow"
)

// The pool answers for the PHP classes it runs: a handler's or step
// class's #[QueuetyHandler] / #[QueuetyStep] attributes and config()
// (HandlerMetadata::from_class), read once per class in a PHP process and
// kept for the pool's life. The workflow engine writes them into the step
// jobs it enqueues and the worker applies them to the jobs it claims, as
// the plugin's StepDispatchOptions::resolve and Worker::process_job do.
//
//	daemon → {"type":"run","seq":13,"kind":"metadata","class":"SummarizeStep"}
//	child  → {"type":"result","seq":13,"ok":true,"output":{"queue":null,"max_attempts":7,…}}
var _ workflow.HandlerMetadataSource = (*Pool)(nil)

// metadataTimeout bounds one metadata request, waiting for the metadata
// process included.
const metadataTimeout = 30 * time.Second

// The class-settings reads have a PHP process of their own, started with
// the first read: on the job processes they waited behind every job queued
// for them (with one process and a backlog of slow jobs, past
// metadataTimeout), and a step job was then written without its class's
// settings. A read is short, so one process serves them all; it is
// replaced when it crashes or is recycled, like a job process.
// A pool that never reads a class's settings (Go steps only, plain jobs of
// handlers without config()) starts no such process.
func (p *Pool) serveMeta() {
	select {
	case req := <-p.metaRequests:
		p.serve(&slot{meta: true}, nil, p.metaRequests, req)
	case <-p.stopping:
		p.slotsWG.Done()
	case <-p.gaveUp:
		p.slotsWG.Done()
	}
}

// metadataCache holds the classes' metadata, one entry per class; an
// entry's done is closed once value and err are set, so concurrent askers
// of one class share one request.
type metadataCache struct {
	mu sync.Mutex
	m  map[string]*metadataEntry
}

type metadataEntry struct {
	done  chan struct{}
	value workflow.HandlerMetadata
	err   error
}

// reset forgets every class (a new pool's processes may load other code).
func (c *metadataCache) reset() {
	c.mu.Lock()
	c.m = nil
	c.mu.Unlock()
}

// ClassMetadata returns the metadata of a handler or step class (or a
// name registered in the bridge's Handlers), read in a PHP process the
// first time and cached. A class PHP does not know has none. A read that
// failed on the way (no answer in time, a stopped pool) is not cached; one
// that PHP answered with an exception (its autoloader threw) is, as the class's
// answer: asking again would only throw again.
func (p *Pool) ClassMetadata(ctx context.Context, class string) (workflow.HandlerMetadata, error) {
	p.meta.mu.Lock()
	if p.meta.m == nil {
		p.meta.m = map[string]*metadataEntry{}
	}
	if e, ok := p.meta.m[class]; ok {
		p.meta.mu.Unlock()
		select {
		case <-e.done:
			if e.err == nil || classError(e.err) {
				return e.value, e.err
			}
			return p.ClassMetadata(ctx, class) // the asker before us failed: ask again
		case <-ctx.Done():
			return workflow.HandlerMetadata{}, context.Cause(ctx)
		}
	}
	e := &metadataEntry{done: make(chan struct{})}
	p.meta.m[class] = e
	p.meta.mu.Unlock()

	e.value, e.err = p.readMetadata(ctx, class)
	if e.err != nil && !classError(e.err) {
		p.meta.mu.Lock()
		if p.meta.m[class] == e {
			delete(p.meta.m, class)
		}
		p.meta.mu.Unlock()
	}
	close(e.done)
	return e.value, e.err
}

// HandlerMetadata implements workflow.HandlerMetadataSource, for the
// callers that can go on without a class's settings (a plain job's retry
// settings fall back to the row's). The workflow engine writes step jobs
// through ClassMetadata instead, and waits when a read fails
// (workflow.ErrClassSettings).
func (p *Pool) HandlerMetadata(class string) workflow.HandlerMetadata {
	ctx, cancel := context.WithTimeout(context.Background(), metadataTimeout)
	defer cancel()
	m, err := p.ClassMetadata(ctx, class)
	if err != nil {
		p.log.Error("could not read a PHP class's settings; going on without them", "class", class, "err", err)
	}
	return m
}

func (p *Pool) readMetadata(ctx context.Context, class string) (workflow.HandlerMetadata, error) {
	if class == "" {
		return workflow.HandlerMetadata{}, nil
	}
	req := &request{ctx: ctx, step: &stepCall{kind: "metadata", class: class}, reply: make(chan error, 1)}
	if err := p.submitTo(ctx, p.metaRequests, req); err != nil {
		return workflow.HandlerMetadata{}, err
	}
	return decodeMetadata(class, req.output)
}

// classError reports a read that PHP answered with an exception.
func classError(err error) bool {
	var pe *Error
	return errors.As(err, &pe)
}

// encodeMetadata builds a metadata request.
func encodeMetadata(seq uint64, class string) []byte {
	b := make([]byte, 0, 64+len(class))
	b = append(b, `{"type":"run","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"kind":"metadata","class":`...)
	b = append(b, phpjson.EncodeString(class)...)
	return append(b, '}')
}

// decodeMetadata reads HandlerMetadata::from_class's array as the bridge
// sends it. A null or absent field is "not set".
func decodeMetadata(class string, out []byte) (workflow.HandlerMetadata, error) {
	var m workflow.HandlerMetadata
	if len(out) == 0 {
		return m, nil
	}
	v, err := phpjson.Decode(out)
	if err != nil {
		return m, fmt.Errorf("metadata of %s: %w", class, err)
	}
	if v.IsEmptyArray() {
		return m, nil
	}
	obj, ok := v.AsObject()
	if !ok {
		return m, fmt.Errorf("metadata of %s: the PHP worker returned %s, not an object", class, out)
	}
	field := func(k string) phpjson.Value { f, _ := obj.Get(k); return f }
	intField := func(k string) int64 {
		f := field(k)
		if n, ok := f.AsInt64(); ok && f.IsInt() {
			return n
		}
		return 0
	}
	m.Queue, _ = field("queue").AsString()
	m.MaxAttempts = intField("max_attempts")
	m.Backoff = field("backoff")
	if rl, ok := field("rate_limit").AsList(); ok && len(rl) >= 2 {
		maxN, _ := rl[0].AsInt64()
		window, _ := rl[1].AsInt64()
		m.RateLimit = &workflow.RateLimit{Max: maxN, Window: window}
	}
	m.ConcurrencyGroup, _ = field("concurrency_group").AsString()
	m.ConcurrencyLimit = intField("concurrency_limit")
	m.CostUnits = intField("cost_units")
	if job, ok := field("job").AsObject(); ok {
		jobField := func(k string) phpjson.Value { f, _ := job.Get(k); return f }
		m.Job = &workflow.JobClassSettings{Backoff: jobField("backoff")}
		m.Job.Tries, _ = jobField("tries").AsInt64()
		m.Job.Timeout, _ = jobField("timeout").AsInt64()
	}
	return m, nil
}

// PeekClassMetadata returns a class's metadata if it is known already;
// otherwise it starts reading it in the background and returns false. The
// worker's claim uses it: a claim holds row locks and must not wait for a
// busy pool, and a job of a class not read yet simply waits for the next
// claim (it would wait for a free PHP process anyway).
func (p *Pool) PeekClassMetadata(class string) (workflow.HandlerMetadata, bool) {
	p.meta.mu.Lock()
	e, ok := p.meta.m[class]
	p.meta.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			if e.err == nil || classError(e.err) {
				// A class PHP cannot load has no settings to apply:
				// its jobs are admitted and fail as they would in PHP.
				return e.value, true
			}
		default:
			return workflow.HandlerMetadata{}, false // being read
		}
	}
	go func() {
		ctx, cancel := context.WithTimeout(p.life, metadataTimeout)
		defer cancel()
		if _, err := p.ClassMetadata(ctx, class); err != nil {
			p.log.Warn("could not read a PHP class's settings; its jobs wait", "class", class, "err", err)
		}
	}()
	return workflow.HandlerMetadata{}, false
}

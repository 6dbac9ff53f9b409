package phppool

import (
	"encoding/json"
	"strconv"

	"github.com/queuety-go/queuety/internal/phpjson"
	"github.com/queuety-go/queuety/queuety"
)

// protocolVersion is what a worker must announce in its ready frame.
const protocolVersion = 1

// message is any frame the PHP side sends.
type message struct {
	Type     string          `json:"type"`
	Seq      uint64          `json:"seq"`
	Protocol int             `json:"protocol"`
	PID      int             `json:"pid"`
	PHP      string          `json:"php"`
	Progress json.RawMessage `json:"progress"`
	OK       bool            `json:"ok"`
	Memory   int64           `json:"memory"`
	// PeakKB is memory_get_peak_usage(true) / 1024 after the job: what the
	// plugin's worker logs as memory_peak_kb.
	PeakKB int64           `json:"memory_peak_kb"`
	Error  *phpError       `json:"error"`
	Output json.RawMessage `json:"output"`
	Retry  *Retry          `json:"retry"`
}

type phpError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
	Trace   string `json:"trace"`
}

type jobMeta struct {
	ID          int64  `json:"id"`
	Handler     string `json:"handler"`
	Queue       string `json:"queue"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Priority    int    `json:"priority"`
	// A workflow step's workflow and step, which the PHP side puts in the
	// plugin's ExecutionContext (current_workflow_id(), artifacts, traces).
	WorkflowID *int64 `json:"workflow_id,omitempty"`
	StepIndex  *int64 `json:"step_index,omitempty"`
}

// encodeRun builds a run request. The payload goes through phpjson, not
// encoding/json, so PHP's json_decode sees the stored bytes' values exactly
// (big integers, key order, empty arrays).
func encodeRun(seq uint64, j *queuety.Job) ([]byte, error) {
	meta, err := json.Marshal(jobMeta{
		ID: j.ID, Handler: j.Handler, Queue: j.Queue,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Priority: int(j.Priority),
	})
	if err != nil {
		return nil, err
	}
	payload := j.Payload
	if payload.IsNull() {
		payload = phpjson.List() // a job built by hand; PHP handlers get []
	}
	b := make([]byte, 0, 96+len(meta)+len(j.RawPayload))
	b = append(b, `{"type":"run","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"job":`...)
	b = append(b, meta...)
	b = append(b, `,"payload":`...)
	if b, err = phpjson.Append(b, payload); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// progressValue turns a heartbeat's progress into what Job.Heartbeat takes:
// nil for none or an empty array (Heartbeat::beat() then only refreshes
// reserved_at, as Queuety's does), else the value with PHP's bytes kept.
func progressValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	v, err := phpjson.Decode(raw)
	if err != nil {
		return nil, err
	}
	if v.IsNull() || v.IsEmptyArray() {
		return nil, nil
	}
	return v, nil
}

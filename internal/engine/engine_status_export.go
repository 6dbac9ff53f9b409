package engine

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// Timeline returns a workflow's events in order: those after event id
// `after`, at most limit (< 1: all).
func (e *Engine) Timeline(ctx context.Context, workflowID, after int64, limit int) ([]workflow.TimelineEvent, error) {
	if _, err := e.store.GetWorkflow(ctx, workflowID); err != nil {
		return nil, err
	}
	if limit < 1 {
		limit = 1 << 30
	}
	rows, err := e.store.WorkflowTimeline(ctx, workflowID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]workflow.TimelineEvent, len(rows))
	for i, r := range rows {
		out[i] = workflow.TimelineEvent{
			ID: r.ID, WorkflowID: r.WorkflowID, JobID: exNullInt(r.JobID.Int64, r.JobID.Valid),
			ParentEventID: exNullInt(r.ParentEventID.Int64, r.ParentEventID.Valid), StepIndex: r.StepIndex,
			StepName: exNullStr(r.StepName.String, r.StepName.Valid), StepType: exNullStr(r.StepType.String, r.StepType.Valid),
			Handler: r.Handler, Event: r.Event, Queue: exNullStr(r.Queue.String, r.Queue.Valid),
			Attempt: exNullInt(r.Attempt.Int64, r.Attempt.Valid),
			Input:   exColumn(r.Input.String, r.Input.Valid), Output: exColumn(r.Output.String, r.Output.Valid),
			StateBefore: exColumn(r.StateBefore.String, r.StateBefore.Valid),
			StateAfter:  exColumn(r.StateAfter.String, r.StateAfter.Valid),
			Context:     exColumn(r.Context.String, r.Context.Valid),
			Artifacts:   exColumn(r.Artifacts.String, r.Artifacts.Valid),
			Chunks:      exColumn(r.Chunks.String, r.Chunks.Valid), Error: exColumn(r.Error.String, r.Error.Valid),
			DurationMS: exNullInt(r.DurationMS.Int64, r.DurationMS.Valid), CreatedAt: store.DateTime(r.CreatedAt),
		}
		annotateLocal(&out[i])
	}
	return out, nil
}

func exNullInt(v int64, ok bool) *int64 {
	if !ok {
		return nil
	}
	return &v
}

func exNullStr(v string, ok bool) *string {
	if !ok {
		return nil
	}
	return &v
}

// exColumn is row_nullable_json_array: NULL stays null; a JSON array
// or object is decoded; anything else becomes [].
func exColumn(s string, ok bool) phpjson.Value {
	if !ok {
		return phpjson.Null()
	}
	return exArray(&s)
}

// exArray is row_json_array.
func exArray(s *string) phpjson.Value {
	if s == nil {
		return phpjson.List()
	}
	v, err := phpjson.DecodeString(*s)
	if err != nil || !phpjson.IsArray(v) {
		return phpjson.List()
	}
	return v
}

func exNullableArray(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Null()
	}
	return exArray(s)
}

func exInt(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Int(0)
	}
	n, _ := strconv.ParseInt(*s, 10, 64)
	return phpjson.Int(n)
}

func exNullableInt(s *string) phpjson.Value {
	if s == nil || *s == "" {
		return phpjson.Null()
	}
	return exInt(s)
}

func exString(s *string) phpjson.Value {
	if s == nil {
		return phpjson.Null()
	}
	return phpjson.String(*s)
}

// exportField says how one column is exported.
type exportField struct {
	key, col string
	conv     func(*string) phpjson.Value
}

func exRows(rows []store.RawRow, fields []exportField) phpjson.Value {
	out := make([]phpjson.Value, len(rows))
	for i, r := range rows {
		o := phpjson.NewObject()
		for _, f := range fields {
			o.Set(f.key, f.conv(r.Get(f.col)))
		}
		out[i] = phpjson.ObjectValue(o)
	}
	return phpjson.List(out...)
}

func exFields(conv func(*string) phpjson.Value, cols ...string) []exportField {
	out := make([]exportField, len(cols))
	for i, c := range cols {
		out[i] = exportField{c, c, conv}
	}
	return out
}

func exConcat(fs ...[]exportField) []exportField {
	var out []exportField
	for _, f := range fs {
		out = append(out, f...)
	}
	return out
}

// Export is WorkflowExporter::export: the workflow row (full state), its
// jobs, events, logs, signals, artifacts, chunks and wait dependencies,
// with exported_at and queuety_version, in the plugin's key order.
func (e *Engine) Export(ctx context.Context, workflowID int64) (*phpjson.Object, error) {
	rows, err := e.store.ExportWorkflowRows(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	w := rows.Workflow
	state := exArray(w.Get("state"))
	stateKey := func(k string) phpjson.Value {
		if o, ok := state.AsObject(); ok {
			if v, ok := o.Get(k); ok {
				return v
			}
		}
		return phpjson.Null()
	}
	parent := phpjson.Null()
	if p := w.Get("parent_workflow_id"); p != nil && *p != "" && *p != "0" {
		parent = exInt(p)
	}
	wf := phpjson.NewObject().
		Set("id", exInt(w.Get("id"))).
		Set("name", exString(w.Get("name"))).
		Set("status", exString(w.Get("status"))).
		Set("state", state).
		Set("current_step", exInt(w.Get("current_step"))).
		Set("total_steps", exInt(w.Get("total_steps"))).
		Set("parent_workflow_id", parent).
		Set("parent_step_index", exNullableInt(w.Get("parent_step_index"))).
		Set("started_at", exString(w.Get("started_at"))).
		Set("completed_at", exString(w.Get("completed_at"))).
		Set("failed_at", exString(w.Get("failed_at"))).
		Set("error_message", exString(w.Get("error_message"))).
		Set("deadline_at", exString(w.Get("deadline_at"))).
		Set("definition_version", stateKey(workflow.KeyDefinitionVersion)).
		Set("definition_hash", stateKey(workflow.KeyDefinitionHash)).
		Set("idempotency_key", stateKey(workflow.KeyIdempotencyKey))

	jobs := exRows(rows.Jobs, exConcat(
		exFields(exInt, "id"), exFields(exString, "queue", "handler"), exFields(exArray, "payload"),
		exFields(exInt, "priority"), exFields(exString, "status"), exFields(exInt, "attempts", "max_attempts"),
		exFields(exNullableInt, "step_index"),
		exFields(exString, "available_at", "reserved_at", "completed_at", "failed_at", "error_message", "created_at")))
	events := exRows(rows.Events, exConcat(
		exFields(exInt, "id"), exFields(exNullableInt, "job_id", "parent_event_id"), exFields(exInt, "step_index"),
		exFields(exString, "step_name", "step_type", "handler", "event", "queue"), exFields(exNullableInt, "attempt"),
		exFields(exNullableArray, "input", "output", "state_before", "state_after", "context", "artifacts", "chunks", "error"),
		exFields(exNullableInt, "duration_ms"), exFields(exString, "created_at")))
	logs := exRows(rows.Logs, exConcat(
		exFields(exInt, "id"), exFields(exNullableInt, "job_id", "step_index"), exFields(exString, "handler", "queue", "event"),
		exFields(exNullableInt, "attempt", "duration_ms"), exFields(exString, "error_message"),
		exFields(exNullableArray, "context"), exFields(exString, "created_at")))
	signals := exRows(rows.Signals, exConcat(
		exFields(exInt, "id", "workflow_id"), exFields(exString, "signal_name"), exFields(exArray, "payload"),
		exFields(exString, "received_at")))
	deps := exRows(rows.Dependencies, exConcat(
		exFields(exInt, "id", "waiting_workflow_id", "step_index", "dependency_workflow_id"),
		exFields(exString, "satisfied_at", "created_at")))
	artifacts := make([]phpjson.Value, len(rows.Artifacts))
	for i, r := range rows.Artifacts {
		kind := r.Get("kind")
		content := exString(r.Get("content"))
		if kind != nil && strings.ToLower(*kind) == "json" {
			content = exNullableArray(r.Get("content"))
		}
		artifacts[i] = phpjson.ObjectValue(phpjson.NewObject().
			Set("id", exInt(r.Get("id"))).Set("workflow_id", exInt(r.Get("workflow_id"))).
			Set("key", exString(r.Get("artifact_key"))).Set("kind", exString(kind)).
			Set("content", content).Set("metadata", exArray(r.Get("metadata"))).
			Set("step_index", exNullableInt(r.Get("step_index"))).
			Set("created_at", exString(r.Get("created_at"))).Set("updated_at", exString(r.Get("updated_at"))))
	}
	chunks := exRows(rows.Chunks, exConcat(
		exFields(exInt, "id", "job_id", "workflow_id"), exFields(exNullableInt, "step_index"), exFields(exInt, "chunk_index"),
		exFields(exString, "content", "created_at")))

	doc := phpjson.NewObject().
		Set("workflow", phpjson.ObjectValue(wf)).
		Set("jobs", jobs).
		Set("events", events).
		Set("logs", logs).
		Set("signals", signals).
		Set("artifacts", phpjson.List(artifacts...)).
		Set("chunks", chunks).
		Set("wait_dependencies", deps).
		Set("exported_at", phpjson.String(e.store.Now().Format("2006-01-02T15:04:05-07:00"))).
		Set("queuety_version", phpjson.String(workflow.ExportVersion))
	// Local activity executions (execution_mode, local_activity, attempts):
	// only for workflows that have some, so plugin exports stay the same.
	if acts, ok, err := e.exportActivities(ctx, workflowID); err != nil {
		return nil, err
	} else if ok {
		doc.Set("activities", acts)
	}
	return doc, nil
}

// PutArtifact is ArtifactStore::put: stores content under key for the
// workflow, replacing an existing one. Kind "json" stores content as
// json_encode(content, JSON_UNESCAPED_SLASHES); other kinds store a string
// as is (anything else JSON-encoded). stepIndex < 0 stores NULL.
func (e *Engine) PutArtifact(ctx context.Context, workflowID int64, key string, content phpjson.Value, kind string, stepIndex int, metadata *phpjson.Object) error {
	if workflowID < 1 {
		return &workflow.RuntimeError{Message: "Artifacts require a valid workflow ID."}
	}
	key, kind = phpjson.Trim(key), phpjson.Trim(kind)
	if key == "" {
		return &workflow.RuntimeError{Message: "Artifacts require a non-empty key."}
	}
	if kind == "" {
		return &workflow.RuntimeError{Message: "Artifacts require a non-empty kind."}
	}
	var stored string
	if s, ok := content.AsString(); ok && strings.ToLower(kind) != "json" {
		stored = s
	} else {
		b, err := phpjson.Encode(content)
		if err != nil {
			return err
		}
		stored = string(phpjson.UnescapeSlashes(b))
	}
	if metadata == nil {
		metadata = phpjson.NewObject()
	}
	meta, err := encodeObject(metadata)
	if err != nil {
		return err
	}
	var step sql.NullInt64
	if stepIndex >= 0 {
		step = store.Int(int64(stepIndex))
	}
	return e.store.PutArtifact(ctx, workflowID, key, kind, stored, string(meta), step)
}

// GetArtifact is ArtifactStore::get (store.ErrArtifactNotFound when
// missing).
func (e *Engine) GetArtifact(ctx context.Context, workflowID int64, key string) (*workflow.Artifact, error) {
	a, err := e.store.GetArtifact(ctx, workflowID, phpjson.Trim(key))
	if err != nil {
		return nil, err
	}
	return artifactOf(a), nil
}

// ListArtifacts is ArtifactStore::list with content: a workflow's
// artifacts, by key.
func (e *Engine) ListArtifacts(ctx context.Context, workflowID int64) ([]*workflow.Artifact, error) {
	rows, err := e.store.ListArtifacts(ctx, workflowID)
	if err != nil {
		return nil, err
	}
	out := make([]*workflow.Artifact, len(rows))
	for i := range rows {
		out[i] = artifactOf(&rows[i])
	}
	return out, nil
}

// artifactOf is ArtifactStore::map_row with content.
func artifactOf(a *store.Artifact) *workflow.Artifact {
	out := &workflow.Artifact{
		ID: a.ID, WorkflowID: a.WorkflowID, Key: a.Key, Kind: a.Kind,
		StepIndex: exNullInt(a.StepIndex.Int64, a.StepIndex.Valid),
		Metadata:  phpjson.List(),
		CreatedAt: store.DateTime(a.CreatedAt), UpdatedAt: store.DateTime(a.UpdatedAt),
		Content: phpjson.String(a.Content),
	}
	if a.Metadata.Valid {
		if v, err := phpjson.DecodeString(a.Metadata.String); err == nil {
			out.Metadata = v
		}
	}
	if strings.ToLower(a.Kind) == "json" {
		v, err := phpjson.DecodeString(a.Content)
		if err != nil {
			v = phpjson.Null()
		}
		out.Content = v
	}
	return out
}

// DeleteArtifact is ArtifactStore::delete.
func (e *Engine) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	return e.store.DeleteArtifact(ctx, workflowID, phpjson.Trim(key))
}

package queuety

import (
	"context"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
	"github.com/queuety-go/queuety/workflow"
)

// WorkflowFilter selects workflows for ListWorkflows: by status and name
// ("" = any), newest first, at most Limit (< 1: 50).
type WorkflowFilter struct {
	Status string
	Name   string
	Limit  int
}

// WorkflowStatus is Queuety::workflow_status: status, current step (index,
// name, type), wait type, what it waits for and the live wait details
// (matched / remaining / failed), public state, definition version and
// hash, idempotency key, budget, artifacts, timestamps and error.
func (c *Client) WorkflowStatus(ctx context.Context, id int64) (*workflow.StatusReport, error) {
	return c.engine(nil).WorkflowStatus(ctx, id)
}

// ListWorkflows is Queuety::list_workflows with filters (no wait details).
func (c *Client) ListWorkflows(ctx context.Context, f WorkflowFilter) ([]*workflow.StatusReport, error) {
	return c.engine(nil).ListWorkflows(ctx, store.WorkflowFilter{Status: f.Status, Name: f.Name, Limit: f.Limit})
}

// WorkflowTimeline returns a workflow's workflow_events rows in order:
// those after event id `after`, at most limit (< 1: all).
func (c *Client) WorkflowTimeline(ctx context.Context, id, after int64, limit int) ([]workflow.TimelineEvent, error) {
	return c.engine(nil).Timeline(ctx, id, after, limit)
}

// ExportWorkflow is Queuety::export_workflow: the plugin's export document
// (workflow, jobs, events, logs, signals, artifacts, chunks,
// wait_dependencies, exported_at, queuety_version). workflow.ExportJSON
// prints it as export_json does.
func (c *Client) ExportWorkflow(ctx context.Context, id int64) (*phpjson.Object, error) {
	return c.engine(nil).Export(ctx, id)
}

// PutArtifact is Queuety's ArtifactStore::put (see engine.Engine.PutArtifact).
func (c *Client) PutArtifact(ctx context.Context, workflowID int64, key string, content phpjson.Value, kind string, stepIndex int, metadata *phpjson.Object) error {
	return c.engine(nil).PutArtifact(ctx, workflowID, key, content, kind, stepIndex, metadata)
}

// Artifact is ArtifactStore::get (store.ErrArtifactNotFound when missing).
func (c *Client) Artifact(ctx context.Context, workflowID int64, key string) (*workflow.Artifact, error) {
	return c.engine(nil).GetArtifact(ctx, workflowID, key)
}

// Artifacts is ArtifactStore::list with content, by key.
func (c *Client) Artifacts(ctx context.Context, workflowID int64) ([]*workflow.Artifact, error) {
	return c.engine(nil).ListArtifacts(ctx, workflowID)
}

// DeleteArtifact is ArtifactStore::delete.
func (c *Client) DeleteArtifact(ctx context.Context, workflowID int64, key string) error {
	return c.engine(nil).DeleteArtifact(ctx, workflowID, key)
}

package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/queuety-go/queuety/internal/phpjson"
)

// Steps returns the serialized step list (build_steps): what Build stores
// under _steps.
func (b *Builder) Steps() ([]Step, error) {
	if b.err != nil {
		return nil, b.err
	}
	values, err := b.buildSteps()
	if err != nil {
		return nil, err
	}
	steps := make([]Step, len(values))
	for i, v := range values {
		if steps[i], err = ParseStep(v); err != nil {
			return nil, err
		}
	}
	return steps, nil
}

// buildSteps serializes the steps in PHP's shapes and key order.
func (b *Builder) buildSteps() ([]phpjson.Value, error) {
	out := make([]phpjson.Value, 0, len(b.steps))
	for _, s := range b.steps {
		body, err := s.body()
		if err != nil {
			return nil, err
		}
		o := phpjson.CloneObject(body)
		switch {
		case s.compensation != nil:
			o.Set("compensation", phpjson.String(*s.compensation))
		case s.compensationAlways:
			o.Set("compensation", phpjson.Null())
		}
		out = append(out, phpjson.ObjectValue(o))
	}
	return out, nil
}

// DefinitionHash returns _definition_hash: the sha256 of the JSON of the
// definition's behaviour-relevant parts. Queuety never checks it; it tells
// runs of different definitions apart across deploys.
func (b *Builder) DefinitionHash() (string, error) {
	if b.err != nil {
		return "", b.err
	}
	steps, err := b.buildSteps()
	if err != nil {
		return "", err
	}
	return b.definitionHash(steps)
}

// definitionFields are the leading keys the definition hash and the
// runtime definition share, in the plugin's order (the hash depends on it).
func (b *Builder) definitionFields(steps []phpjson.Value) *phpjson.Object {
	return phpjson.NewObject().
		Set("name", phpjson.String(b.name)).
		Set("steps", phpjson.List(steps...)).
		Set("queue", phpjson.String(b.queue)).
		Set("priority", phpjson.Int(int64(b.priority))).
		Set("max_attempts", phpjson.Int(b.maxAttempts)).
		Set("cancel_handler", nullString(b.cancelHandler)).
		Set("prune_after", nullInt(b.pruneAfter)).
		Set("deadline_seconds", nullInt(b.deadlineSeconds)).
		Set("deadline_handler", nullString(b.deadlineHandler)).
		Set("definition_version", nullString(b.version))
}

// definitionHash hashes, in exactly this key order, the builder's name,
// steps and settings. max_cost_units and max_started_workflows are not
// part of it (PHP leaves them out).
func (b *Builder) definitionHash(steps []phpjson.Value) (string, error) {
	def := b.definitionFields(steps).
		Set("max_transitions", nullInt(b.maxTransitions)).
		Set("max_for_each_items", nullInt(b.maxForEachItems)).
		Set("max_state_bytes", nullInt(b.maxStateBytes)).
		Set("compensate_on_failure", phpjson.Bool(b.compensateOnFailure))
	encoded, err := phpjson.Encode(phpjson.ObjectValue(def))
	if err != nil {
		return "", fmt.Errorf("workflow: encoding the definition of %q: %w", b.name, err)
	}
	sum := sha256.Sum256(encoded)
	return hex.EncodeToString(sum[:]), nil
}

// RuntimeDefinition returns the definition bundle
// (build_runtime_definition) a start_workflows step embeds and a template
// dispatches from.
func (b *Builder) RuntimeDefinition() (RuntimeDefinition, error) {
	if b.err != nil {
		return RuntimeDefinition{}, b.err
	}
	v, err := b.runtimeDefinitionValue()
	if err != nil {
		return RuntimeDefinition{}, err
	}
	return ParseRuntimeDefinition(v)
}

func (b *Builder) runtimeDefinitionValue() (phpjson.Value, error) {
	if b.err != nil {
		return phpjson.Null(), b.err
	}
	steps, err := b.buildSteps()
	if err != nil {
		return phpjson.Null(), err
	}
	hash, err := b.definitionHash(steps)
	if err != nil {
		return phpjson.Null(), err
	}
	return phpjson.ObjectValue(b.definitionFields(steps).
		Set("definition_hash", phpjson.String(hash)).
		Set("workflow_budget", b.budget().Value()).
		Set("compensate_on_failure", phpjson.Bool(b.compensateOnFailure))), nil
}

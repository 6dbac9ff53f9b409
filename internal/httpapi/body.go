package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/queuety-go/queuety/internal/phpjson"
	store "github.com/queuety-go/queuety/sql"
)

// readBody reads a JSON object body of at most max bytes. An empty body is
// an empty object (the task heartbeat's body is optional in the OpenAPI).
// It is decoded with phpjson so values we pass on to storage (a task
// result, heartbeat progress) keep PHP's view of them.
func readBody(w http.ResponseWriter, r *http.Request, max int64) (*phpjson.Object, *apiError) {
	tooLarge := refuse(http.StatusRequestEntityTooLarge, ReasonPayloadTooLarge,
		fmt.Sprintf("The request body is larger than %d bytes.", max),
		field{"max_body_bytes", max})
	if r.ContentLength > max {
		return nil, tooLarge
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, refuse(http.StatusBadRequest, ReasonInvalidJSON, "The request body could not be read: "+err.Error())
	}
	if strings.TrimSpace(string(raw)) == "" {
		return phpjson.NewObject(), nil
	}
	v, err := phpjson.Decode(raw)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, ReasonInvalidJSON, "The request body is not valid JSON: "+strings.TrimPrefix(err.Error(), "phpjson: "))
	}
	if v.Kind() != phpjson.KindObject && !v.IsEmptyArray() {
		var fe fieldErrors
		fe.add("body", "The request body must be a JSON object.")
		return nil, fe.validation()
	}
	o, _ := v.AsObject()
	return o, nil
}

// fields reads the members of a request object under strict rules: every
// key must be one the route knows, every value must have the right type.
// Problems collect in errs keyed by field ("task_slots.session_available"
// for nested ones). An explicit null counts as "not provided".
// readFields reads the request body (see readBody) and returns its fields,
// which report into the returned errors.
func (s *Server) readFields(w http.ResponseWriter, r *http.Request) (*fields, *fieldErrors, *apiError) {
	body, e := readBody(w, r, s.cfg.MaxBodyBytes)
	if e != nil {
		return nil, nil, e
	}
	errs := &fieldErrors{}
	return newFields(body, errs), errs, nil
}

type fields struct {
	obj    *phpjson.Object
	prefix string
	known  map[string]bool
	errs   *fieldErrors
}

func newFields(o *phpjson.Object, errs *fieldErrors) *fields {
	return &fields{obj: o, known: map[string]bool{}, errs: errs}
}

// nested reads the object under key with the same rules.
func (f *fields) nested(key string) (*fields, bool) {
	v, ok := f.value(key)
	if !ok {
		return nil, false
	}
	o, isObj := v.AsObject()
	if !isObj {
		f.fail(key, "must be an object")
		return nil, false
	}
	return &fields{obj: o, prefix: f.name(key) + ".", known: map[string]bool{}, errs: f.errs}, true
}

func (f *fields) name(key string) string { return f.prefix + key }

// fail records "The <field> field <what>." the way Laravel words it.
func (f *fields) fail(key, what string) {
	f.errs.add(f.name(key), fmt.Sprintf("The %s field %s.", strings.ReplaceAll(f.name(key), "_", " "), what))
}

// value returns a non-null member and marks key as known.
func (f *fields) value(key string) (phpjson.Value, bool) {
	f.known[key] = true
	v, ok := f.obj.Get(key)
	if !ok || v.IsNull() {
		return phpjson.Value{}, false
	}
	return v, true
}

func (f *fields) required(key string) {
	if !f.errs.has(f.name(key)) {
		f.fail(key, "is required")
	}
}

// str reads a string of at most maxLen characters.
func (f *fields) str(key string, required bool, maxLen int) (string, bool) {
	v, ok := f.value(key)
	if !ok {
		if required {
			f.required(key)
		}
		return "", false
	}
	s, isStr := v.AsString()
	if !isStr {
		f.fail(key, "must be a string")
		return "", false
	}
	if maxLen > 0 && utf8.RuneCountInString(s) > maxLen {
		f.fail(key, fmt.Sprintf("must not be greater than %d characters", maxLen))
		return "", false
	}
	return s, true
}

// queue reads a queue name: a string meeting store.CheckName's rules
// (at most 64 characters, no control character), else a field error
// naming the rule (N14, N18).
func (f *fields) queue(key string) (string, bool) {
	q, ok := f.str(key, false, maxQueueLength)
	if !ok {
		return "", false
	}
	if msg := nameRule(q); msg != "" {
		f.fail(key, msg)
		return q, false
	}
	return q, true
}

// queues reads a list of queue names, each as queue does.
func (f *fields) queues(key string) ([]string, bool) {
	qs, ok := f.strings(key, maxQueueLength)
	if !ok {
		return qs, false
	}
	for i, q := range qs {
		if msg := nameRule(q); msg != "" {
			f.fail(fmt.Sprintf("%s.%d", key, i), msg)
			ok = false
		}
	}
	return qs, ok
}

// nameRule words a queue name's refusal as the field messages do ("" when
// the name is good).
func nameRule(q string) string {
	var ne *store.NameError
	if !errors.As(store.CheckName(store.QueueName, q), &ne) {
		return ""
	}
	switch ne.Reason {
	case store.NameEmpty:
		return "must be a non-empty string"
	case store.NameTooLong:
		return fmt.Sprintf("must not be greater than %d characters", maxQueueLength)
	case store.NameInvalidUTF8:
		return "must be valid UTF-8"
	}
	return "must not contain control characters (NUL, ESC, tab, newline, DEL)"
}

// integer reads a JSON integer in [min, max] (max 0: unbounded).
func (f *fields) integer(key string, required bool, min, max int64) *int64 {
	v, ok := f.value(key)
	if !ok {
		if required {
			f.required(key)
		}
		return nil
	}
	n, isInt := v.AsInt64()
	if !v.IsInt() || !isInt {
		f.fail(key, "must be an integer")
		return nil
	}
	if n < min {
		f.fail(key, fmt.Sprintf("must be at least %d", min))
		return nil
	}
	if max > 0 && n > max {
		f.fail(key, fmt.Sprintf("must not be greater than %d", max))
		return nil
	}
	return &n
}

// intPtr is integer for fields that fit an int.
func (f *fields) intPtr(key string, min, max int64) *int {
	n := f.integer(key, false, min, max)
	if n == nil {
		return nil
	}
	i := int(*n)
	return &i
}

// number reads any JSON number ≥ min.
func (f *fields) number(key string, min float64) {
	v, ok := f.value(key)
	if !ok {
		return
	}
	n, isNum := v.AsFloat64()
	if !isNum {
		f.fail(key, "must be a number")
		return
	}
	if n < min {
		f.fail(key, fmt.Sprintf("must be at least %g", min))
	}
}

func (f *fields) boolean(key string) *bool {
	v, ok := f.value(key)
	if !ok {
		return nil
	}
	b, isBool := v.AsBool()
	if !isBool {
		f.fail(key, "must be true or false")
		return nil
	}
	return &b
}

// strings reads a list of strings; each must be non-blank and at most
// maxLen characters. ok is false when the field was absent or invalid.
func (f *fields) strings(key string, maxLen int) ([]string, bool) {
	return f.stringList(key, maxLen, false)
}

// stringList is strings; with allowBlank, blank entries pass (capabilities
// are trimmed and their empties dropped, as the server does).
func (f *fields) stringList(key string, maxLen int, allowBlank bool) ([]string, bool) {
	v, ok := f.value(key)
	if !ok {
		return nil, false
	}
	list, isList := v.AsList()
	if !isList {
		f.fail(key, "must be a list of strings")
		return nil, false
	}
	out := make([]string, 0, len(list))
	good := true
	for i, item := range list {
		s, isStr := item.AsString()
		elem := fmt.Sprintf("%s.%d", key, i)
		switch {
		case !isStr:
			f.fail(elem, "must be a string")
			good = false
		case !allowBlank && strings.TrimSpace(s) == "":
			f.fail(elem, "must be a non-empty string")
			good = false
		case maxLen > 0 && utf8.RuneCountInString(s) > maxLen:
			f.fail(elem, fmt.Sprintf("must not be greater than %d characters", maxLen))
			good = false
		default:
			out = append(out, s)
		}
	}
	return out, good
}

// stringMap reads an object whose values are strings (workflow definition
// fingerprints).
func (f *fields) stringMap(key string) {
	v, ok := f.value(key)
	if !ok {
		return
	}
	o, isObj := v.AsObject()
	if !isObj {
		f.fail(key, "must be an object of strings")
		return
	}
	for k, item := range o.All() {
		if _, isStr := item.AsString(); !isStr {
			f.fail(key+"."+k, "must be a string")
		}
	}
}

// any marks key as known and returns its value as sent (null included).
func (f *fields) any(key string) (phpjson.Value, bool) {
	f.known[key] = true
	return f.obj.Get(key)
}

// done reports every key the route does not know. Unknown keys are refused
// rather than ignored: a misspelt option (lease_second) would otherwise
// silently fall back to its default.
func (f *fields) done() {
	for _, k := range f.obj.Keys() {
		if !f.known[k] {
			f.errs.add(f.name(k), fmt.Sprintf("The %s field is not allowed.", strings.ReplaceAll(f.name(k), "_", " ")))
		}
	}
}

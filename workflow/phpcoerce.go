package workflow

import "github.com/queuety-go/queuety/internal/phpjson"

// The runtime reads step definitions and state the way Queuety's PHP does
// (Workflow::to_int, to_string, as_array, StepDispatchOptions::string_value
// and friends): a definition that PHP accepts with a quirk (a numeric
// string, a list where an object was meant) must mean the same here. The
// rules live in internal/phpjson/cast.go, shared with the worker and the
// session options; these are the package's short names for them.

func get(o *phpjson.Object, key string) phpjson.Value    { return phpjson.Get(o, key) }
func coalesce(vals ...phpjson.Value) phpjson.Value       { return phpjson.Coalesce(vals...) }
func isScalar(v phpjson.Value) bool                      { return phpjson.IsScalar(v) }
func isArray(v phpjson.Value) bool                       { return phpjson.IsArray(v) }
func toInt(v phpjson.Value) int64                        { return phpjson.ToInt(v) }
func stringToInt(s string) int64                         { return phpjson.StringToInt(s) }
func toString(v phpjson.Value) string                    { return phpjson.ToString(v) }
func stringValue(v phpjson.Value) (string, bool)         { return phpjson.StringValue(v) }
func optionalString(v phpjson.Value) string              { return phpjson.OptionalString(v) }
func phpTrim(s string) string                            { return phpjson.Trim(s) }
func positiveInt(v phpjson.Value) (int64, bool)          { return phpjson.PositiveInt(v) }
func nonNegativeInt(v phpjson.Value) (int64, bool)       { return phpjson.NonNegativeInt(v) }
func phpArray(v phpjson.Value) *phpjson.Object           { return phpjson.AsArray(v) }
func phpValues(v phpjson.Value) []phpjson.Value          { return phpjson.Values(v) }
func phpIndex(v phpjson.Value, key string) phpjson.Value { return phpjson.Index(v, key) }
func isPHPIntKey(key string) bool                        { return phpjson.IsIntKey(key) }
func cloneObject(o *phpjson.Object) *phpjson.Object      { return phpjson.CloneObject(o) }
func truthy(v phpjson.Value) bool                        { return phpjson.Truthy(v) }

func arrayReplace(base, over *phpjson.Object) *phpjson.Object {
	return phpjson.ArrayReplace(base, over)
}

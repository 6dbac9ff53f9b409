package workflow

import "github.com/queuety-go/queuety/internal/phpjson"

// The PHP loose-typing rules the step kinds (package steps) read step
// definitions and states with: the same functions the engine uses, so a
// kind reads a _steps entry exactly as the runtime does.

// PHPString is PHP's (string) cast of a JSON value.
func PHPString(v phpjson.Value) string { return toString(v) }

// PHPInt is PHP's (int) cast of a JSON value.
func PHPInt(v phpjson.Value) int64 { return toInt(v) }

// PHPTrim is PHP's trim() with its default characters.
func PHPTrim(s string) string { return phpTrim(s) }

// PHPArray reads any PHP array as an object with string keys (a list
// becomes "0".."n-1"), anything else as an empty object; the result may
// share v's object.
func PHPArray(v phpjson.Value) *phpjson.Object { return phpArray(v) }

// PHPIsArray is PHP's is_array of a JSON value (a list or an object).
func PHPIsArray(v phpjson.Value) bool { return isArray(v) }

// PHPValuesEqual is Queuety's values_equal: the canonical JSON encodings
// (object keys sorted as ksort does, lists in order) are the same.
func PHPValuesEqual(a, b phpjson.Value) (bool, error) { return valuesEqual(a, b) }

// PHPTruthy is the negation of PHP's empty().
func PHPTruthy(v phpjson.Value) bool { return truthy(v) }

// PHPValues is array_values of a PHP array (nil when v is not one).
func PHPValues(v phpjson.Value) []phpjson.Value { return phpValues(v) }

// PHPIsIntKey reports whether PHP turns the string key into an int key.
func PHPIsIntKey(key string) bool { return isPHPIntKey(key) }

// PHPCopy is a shallow copy of a PHP array (arrays are values in PHP).
func PHPCopy(o *phpjson.Object) *phpjson.Object { return cloneObject(o) }

// PHPOptionalString reads a nullable string field as the runtime does for
// result_key and correlation_key: a non-blank string, trimmed, else "".
func PHPOptionalString(v phpjson.Value) string { return optionalString(v) }

// PHPIndex is $array[$key] ?? null on any PHP array (a list by position).
func PHPIndex(v phpjson.Value, key string) phpjson.Value { return phpIndex(v, key) }

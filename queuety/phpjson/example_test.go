package phpjson_test

import (
	"fmt"

	"github.com/queuety-go/queuety/queuety/phpjson"
)

// A step's output, written the way PHP writes it: keys in order, "/"
// escaped, non-ASCII as \u escapes, an integral float with no ".0" (PHP 8).
func ExampleNewObject() {
	out := phpjson.NewObject().
		Set("receipt", phpjson.String("r-1/€")).
		Set("total", phpjson.Float(12)).
		Set("lines", phpjson.List(phpjson.Int(1), phpjson.Int(2)))
	b, _ := phpjson.Encode(phpjson.ObjectValue(out))
	fmt.Println(string(b))
	// Output: {"receipt":"r-1\/\u20ac","total":12,"lines":[1,2]}
}

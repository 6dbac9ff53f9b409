package machine_test

import (
	"fmt"

	"github.com/queuety-go/queuety/queuety/machine"
)

// A machine's definition is the bytes the plugin's builder writes; its
// hash is the definition_hash column.
func ExampleBuilder_Definition() {
	b := machine.New("order").
		State("draft", "").Action("DraftAction", nil).On("submit", "done", "", "").
		State("done", machine.StatusCompleted)
	def, hash, err := b.Definition()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(def))
	fmt.Println(len(hash))
	// Output:
	// {"name":"order","initial_state":"draft","states":{"draft":{"name":"draft","action":{"class":"DraftAction","payload":[]},"action_class":"DraftAction","terminal_status":null,"transitions":[{"event":"submit","target_state":"done","guard":null,"guard_class":null,"name":"submit"}]},"done":{"name":"done","action":null,"action_class":null,"terminal_status":"completed","transitions":[]}},"queue":"default","priority":0,"max_attempts":3,"definition_version":null,"definition_hash":"418da8c22803cebe88fdeaeeefc16591608a7e14027dce32700f37dbf977733c"}
	// 64
}

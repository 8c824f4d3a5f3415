package nameset_test

import (
	"fmt"

	"github.com/failoverkit/failover/internal/nameset"
)

func Example() {
	evicting := nameset.New([]string{"member-00013", "member-00042"})
	for _, c := range []string{"member-00012", "member-00042"} {
		fmt.Println(c, evicting.Has(c), evicting.Index(c))
	}
	// Output:
	// member-00012 false -1
	// member-00042 true 1
}

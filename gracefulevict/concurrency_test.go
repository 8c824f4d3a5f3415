package gracefulevict

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
	"k8s.io/utils/ptr"
)

// One Assessor and one binding serve many goroutines at once (run with
// -race): Assess reads its input and writes only its own result.
func TestAssessConcurrently(t *testing.T) {
	defer goleak.VerifyNone(t)
	a := mustAssessor(WithDefaultTimeout(60e9))
	b := unhealthyBinding(
		Task{FromCluster: "member1"},
		Task{FromCluster: "member4", GracePeriodSeconds: ptr.To[int32](30), CreationTimestamp: at(0)},
		Task{FromCluster: "member3"},
	)
	want := a.Assess(b, t0)
	var wg sync.WaitGroup
	got := make([]Assessment, 8)
	for i := range got {
		wg.Go(func() { got[i] = a.Assess(b, t0) })
	}
	wg.Wait()
	for _, g := range got {
		assert.Equal(t, want, g)
	}
}

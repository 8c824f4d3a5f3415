package v1alpha1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/failoverkit/failover/examples/controllerruntime/api/v1alpha1"
)

// A manager's scheme learns the MemberCluster kinds from AddToScheme.
func ExampleAddToScheme() {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	gvks, _, err := s.ObjectKinds(&v1alpha1.MemberCluster{})
	if err != nil {
		panic(err)
	}
	fmt.Println(gvks[0])
	// Output:
	// fleet.example.com/v1alpha1, Kind=MemberCluster
}
